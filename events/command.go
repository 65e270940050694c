package events

import (
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
)

// OpKind names a row operation of a command, on a logical row. The strings
// are the wire names. store.OpKind, the store's write of one stored row, is
// another thing with similar names; see there.
type OpKind string

// The six row operations of SPEC §2.
const (
	OpInsert      OpKind = "insert"      // fails if the row exists
	OpReplace     OpKind = "replace"     // fails if the row does not exist
	OpMerge       OpKind = "merge"       // fails if the row does not exist; merges properties
	OpUpsert      OpKind = "upsert"      // insert or replace
	OpUpsertMerge OpKind = "upsertMerge" // insert or merge
	OpDelete      OpKind = "delete"      // fails if the row does not exist
)

// Valid reports whether k is one of the six operations.
func (k OpKind) Valid() bool {
	switch k {
	case OpInsert, OpReplace, OpMerge, OpUpsert, OpUpsertMerge, OpDelete:
		return true
	}
	return false
}

// RowOp is one operation on one row of the command's partition.
type RowOp struct {
	Op OpKind
	RK string
	// Entity holds the properties written by every operation but delete,
	// which carries none.
	Entity edm.Entity
	// IfVersion, when set, makes the operation apply only if the row exists
	// at exactly this logical version.
	IfVersion *int64
}

// Command is one atomic change to rows of one partition of one table.
type Command struct {
	ID    string
	Table string
	PK    string
	Ops   []RowOp
	// Issuer names the service that sent the command; optional.
	Issuer string
	// IssuedAt is the issuer's clock when it sent the command; optional
	// (zero when absent). Nothing the projector writes depends on it.
	IssuedAt time.Time
	// Meta carries free-form string metadata, such as a correlation ID or
	// undoOf for commands published by replay undo.
	Meta map[string]string
	// Prune, when set, makes the command a prune of its partition (see
	// Prune, prune.go); it then has no Ops.
	Prune *Prune
}

// Limits of SPEC §2, derived from Azure Tables' own.
const (
	// MaxStoreOpsPerTx is the entity-group transaction limit of Azure Tables.
	MaxStoreOpsPerTx = 100
	// StoreOpsPerRowOp is the worst-case number of store operations one row
	// operation costs after versioning: a delete copies the tip to a version
	// row, writes a tombstone and deletes the tip.
	StoreOpsPerRowOp = 3
	// MaxOpsPerCommand is the bound on row operations in one command, so that
	// any command fits one transaction after versioning overhead.
	MaxOpsPerCommand = MaxStoreOpsPerTx / StoreOpsPerRowOp
	// MaxKeyBytes is Azure's limit on a PartitionKey or RowKey: 1 KiB, which
	// Azure measures in UTF-16, so MaxKeyUnits code units.
	MaxKeyBytes = 1024
	// MaxKeyUnits is the key limit in UTF-16 code units.
	MaxKeyUnits = MaxKeyBytes / 2
	// RowKeyOverhead is what versioning adds to a RowKey: the "old:" prefix,
	// the ":" separator and the fixed-width inverted version (SPEC §4).
	RowKeyOverhead = 4 + 1 + 19
	// MaxIDLen is the longest command ID.
	MaxIDLen = 128
	// MaxStoreProperties is Azure's limit on properties per entity, counting
	// PartitionKey, RowKey and Timestamp.
	MaxStoreProperties = 255
	// SystemColumns is how many columns the projector adds to a row
	// (_v, _cmd, _seq, _at, _op, _deleted).
	SystemColumns = 6
	// MaxProperties is the most properties a command's entity may carry.
	MaxProperties = MaxStoreProperties - 3 - SystemColumns
	// MaxPropertyNameLen is Azure's limit on a property name.
	MaxPropertyNameLen = 255
	// MaxEntityBytes is Azure's limit on one entity.
	MaxEntityBytes = 1 << 20
	// MaxCommandBytes is Azure's limit on one transaction.
	MaxCommandBytes = 4 << 20
	// MaxBinaryBytes is Azure's limit on one Binary (and String) property.
	MaxBinaryBytes = 64 << 10
)
