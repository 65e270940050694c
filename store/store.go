package store

import (
	"context"
	"strconv"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// Store is a table store with Azure Tables semantics. Every method is safe for
// concurrent use.
type Store interface {
	// CreateTable creates a table. It returns ErrTableExists if it exists.
	CreateTable(ctx context.Context, table string) error
	// DeleteTable deletes a table and its rows. ErrTableNotFound if absent.
	DeleteTable(ctx context.Context, table string) error
	// ListTables returns the names of all tables, sorted.
	ListTables(ctx context.Context) ([]string, error)

	// Get reads one entity. It returns ErrNotFound if the row does not exist
	// and ErrTableNotFound if the table does not.
	Get(ctx context.Context, table, pk, rk string) (Entity, error)
	// Query returns the next page of entities matching q, in
	// (PartitionKey, RowKey) order on Azure Tables and both backends'
	// emulations of it, but in no particular order on Cosmos DB for Table
	// (docs/cosmos.md): a reader that needs the order uses All (which sorts
	// each page) or Least (the least key of a range, in any order). A page
	// holds at most q.Limit entities.
	// A page may be empty while the range goes on (Page.Continuation not
	// ""), as on Azure, where a query that reached its time budget answers
	// what it found, possibly nothing: callers follow the continuation
	// until it is "" (All, First). The backends of this module happen to
	// answer an empty page only at the end; storetest.Paging does not.
	Query(ctx context.Context, table string, q Query) (Page, error)
	// Transact applies ops atomically: all of them or none. Every op is in
	// partition pk; at most MaxOps ops and MaxTxBytes bytes; no row twice.
	// When an op fails, the error is a *TxError naming it and wrapping the
	// cause (ErrNotFound, ErrExists, ErrPrecondition, ...).
	//
	// On success it returns one etag per op, in op order: the etag the
	// entity the op wrote now has ("" for a Delete), as Azure's $batch
	// response reports it, so that a writer can make its next write
	// conditional on what it just wrote without reading it back. A failed
	// transaction returns no etags.
	Transact(ctx context.Context, table, pk string, ops []Op) ([]string, error)

	// Partitions calls fn with the key of every partition of table that
	// holds at least one entity, in key order, the empty key included,
	// without reading their rows, so that replay can read a table's
	// partitions in parallel. It returns ErrTableNotFound if the table does
	// not exist, and fn's error. A partition created or emptied meanwhile
	// may be listed or not.
	Partitions(ctx context.Context, table string, fn func(pk string) error) error

	// Limits returns the limits of the service beyond Azure Tables' own
	// (the zero events.Limits for Azure Tables, Azurite and the embedded
	// store; events.CosmosLimits for Cosmos DB for Table), which Transact
	// enforces (ValidateTxLimits) and the projector checks commands
	// against, so that it rejects by rule what the store would refuse.
	Limits() events.Limits
}

// Entity is one stored row, in the store layer: its keys, its properties
// (an edm.Entity, the properties alone, as a command carries them; the
// layout's system columns, such as _v and _seq, are properties here like
// any other) and what the store keeps of it (etag, timestamp). The store
// knows nothing of versions: rows.Row is the same entity read by the
// versioned layout of SPEC §4 (rows.DecodeRow, Row.Encode), the layer
// above.
type Entity struct {
	PK, RK string
	Props  edm.Entity
	// ETag is the store's opaque version of the row, set on reads and
	// ignored on writes (conditions go in Op.IfMatch).
	ETag string
	// Timestamp is the store's last-modified time, set on reads.
	Timestamp time.Time
}

// OpKind is the kind of a transaction operation: a physical write of one
// stored row, conditioned on its etag. It is not events.OpKind, the
// logical operation of a command, conditioned on the row's logical version:
// the projector turns the commands on a row into several of these (the
// tip, a version row or tombstone, the fence): an events.OpDelete is a
// Delete of the tip and an Insert of a tombstone.
type OpKind uint8

// The transaction operations of Azure Tables.
const (
	// Insert fails with ErrExists if the row exists.
	Insert OpKind = iota + 1
	// Replace replaces the row; fails with ErrNotFound if it does not exist,
	// or ErrPrecondition if IfMatch is set and does not match. IfMatch "*"
	// or "" means unconditional (the row must still exist).
	Replace
	// Merge merges properties into the row; same conditions as Replace.
	Merge
	// Upsert inserts or replaces (InsertOrReplace); never conditional.
	Upsert
	// UpsertMerge inserts or merges (InsertOrMerge); never conditional.
	UpsertMerge
	// Delete deletes the row; fails with ErrNotFound if absent, or
	// ErrPrecondition if IfMatch is set and does not match.
	Delete
)

func (k OpKind) String() string {
	switch k {
	case Insert:
		return "insert"
	case Replace:
		return "replace"
	case Merge:
		return "merge"
	case Upsert:
		return "upsert"
	case UpsertMerge:
		return "upsertMerge"
	case Delete:
		return "delete"
	}
	return "unknown"
}

// Op is one operation of a transaction.
type Op struct {
	Kind OpKind
	RK   string
	// Props is the entity written; nil for Delete.
	Props edm.Entity
	// IfMatch is an etag condition for Replace, Merge and Delete; "" or "*"
	// means any version.
	IfMatch string
}

// Query selects entities by key range and an optional filter.
type Query struct {
	// PK is the one partition the query reads, unless AllPartitions is set.
	// The empty key is a partition like any other, as in Azure.
	PK string
	// AllPartitions makes the query read every partition of the table, in
	// (PartitionKey, RowKey) order; PK must then be "" (ErrInvalid).
	AllPartitions bool
	// From and To bound the RowKey: From <= RowKey < To. "" leaves that
	// side unbounded. With AllPartitions they apply within every partition.
	From, To string
	// Filter keeps only entities whose properties match every condition.
	// Backends evaluate it server-side where they can.
	Filter []Cond
	// Limit caps the page; 0 means the backend's page size (1000).
	Limit int
	// Continuation resumes after the previous page; "" starts at the top.
	Continuation string
}

// Partition names what a read above the seam covers: one partition, by
// its key (any key, the empty one included), or every partition of a
// table. No key stands for "every partition", so none can be mistaken for
// it.
type Partition struct {
	// PK is the partition's key, when All is false.
	PK string
	// All selects every partition of the table; PK is then "".
	All bool
}

// InPartition is the Partition of key pk.
func InPartition(pk string) Partition { return Partition{PK: pk} }

// AllPartitions is the Partition of a whole table.
var AllPartitions = Partition{All: true}

// Query returns q restricted to p.
func (p Partition) Query(q Query) Query {
	q.PK, q.AllPartitions = p.PK, p.All
	return q
}

// String renders p for messages: the quoted key, or "every partition".
func (p Partition) String() string {
	if p.All {
		return "every partition"
	}
	return strconv.Quote(p.PK)
}

// Cond compares one property with a value. An entity without the property,
// or with a value of another type, does not match.
type Cond struct {
	Prop  string
	Cmp   Cmp
	Value edm.Value
}

// Cmp is a comparison operator of a Cond.
type Cmp uint8

// Comparison operators, as in OData.
const (
	Eq Cmp = iota + 1
	Ne
	Lt
	Le
	Gt
	Ge
)

// Page is one page of a query's results.
type Page struct {
	Entities []Entity
	// Continuation is "" when there is nothing more.
	Continuation string
}

// Limits that both backends enforce, as Azure does.
const (
	MaxOps          = events.MaxStoreOpsPerTx
	MaxTxBytes      = events.MaxCommandBytes
	MaxEntityBytes  = events.MaxEntityBytes
	MaxProperties   = events.MaxStoreProperties - 3 // beside PK, RK, Timestamp
	DefaultPageSize = 1000
)

// Scrubber is implemented by a Store whose files may keep the bytes of
// rows it deleted (free pages, old page images in a write-ahead log), as
// the embedded store's do. Erasure (SPEC §10) calls it after the deletes
// of an erase, and a store that keeps its tables elsewhere (Azure) does not
// implement it.
type Scrubber interface {
	// Scrub removes what is left of deleted rows from the store's files,
	// then reads every file the store owns and returns the names of those
	// that still hold any of values (none when the scrub worked). The
	// values themselves never appear in what it returns.
	Scrub(ctx context.Context, values [][]byte) (held []string, err error)
}
