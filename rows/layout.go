package rows

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// The row layout of SPEC §4. A logical row RK of partition PK is stored as
// one tip row holding its current version and one version row per earlier
// version, all in partition PK, so one transaction covers a row and its
// history.
const (
	// TipPrefix starts the RowKey of a tip row: "tip:" + RK.
	TipPrefix = "tip:"
	// OldPrefix starts the RowKey of a version row:
	// "old:" + escaped RK + ":" + inverted journal sequence.
	OldPrefix = "old:"
)

// System columns written on every row. Names beginning with "_" are reserved
// for them; commands may not use such names.
const (
	ColVersion = "_v"       // Edm.Int64: the row's logical version, from 0
	ColCmd     = "_cmd"     // Edm.String: ID of the command that wrote it
	ColSeq     = "_seq"     // Edm.Int64: journal sequence of that command
	ColAt      = "_at"      // Edm.DateTime: journal time of that command
	ColOp      = "_op"      // Edm.String: the operation (events.OpKind)
	ColDeleted = "_deleted" // Edm.Boolean: true on tombstones only
)

const seqWidth = 19 // digits of math.MaxInt64

// ErrLayout marks a stored row that is not a row of the layout: a key that
// is neither a tip nor a version row, missing system columns, or a version
// row whose key does not carry its _seq, as in tables written before
// version rows were keyed by sequence (move those with replay rebuild
// --into). Checked with errors.Is.
var ErrLayout = errors.New("row not in the layout of SPEC §4")

// ErrForeignRow marks a stored row the projector did not write where the
// layout expects one of its own: a fence, tip or version row key without
// the system columns the projector writes, or a key in a partition's
// layout ranges that is not in the layout's shape (another program wrote
// the table, say with the Azure SDK). Every such error is also ErrLayout;
// a ForeignRowError says which row. The projector holds the partition
// rather than stop (SPEC §5, "A held partition"). Checked with errors.Is.
var ErrForeignRow = errors.New("a row the projector did not write")

// ForeignRowError names a foreign row: its partition and stored RowKey.
// It matches ErrForeignRow and ErrLayout with errors.Is.
type ForeignRowError struct {
	PK, Key string
	// Why says what is wrong with it.
	Why string
}

func (e *ForeignRowError) Error() string {
	return fmt.Sprintf("%v: partition %q row key %q %s (%v)", ErrForeignRow, e.PK, e.Key, e.Why, ErrLayout)
}

// Is reports ErrForeignRow and ErrLayout.
func (e *ForeignRowError) Is(target error) bool {
	return target == ErrForeignRow || target == ErrLayout
}

// TipKey is the store RowKey of the tip row of rk.
func TipKey(rk string) string { return TipPrefix + rk }

// VersionKey is the store RowKey of the version of rk that the command at
// journal sequence seq wrote. Sequences are inverted (MaxInt64 - seq) and
// zero-padded, so the newest version sorts first, and the first version row
// at or after VersionKey(rk, S) is the newest written at or before S.
// Sequences above MaxInt64 count as MaxInt64.
//
// The natural RowKey is escaped (":" as "%3A", "%" as "%25") so that the
// first ":" after the prefix always ends it: the history of "a" is the
// key range "old:a:" .. "old:a;" and never holds rows of "a:b". Keys
// without ":" or "%" are stored exactly as SPEC §4 writes them.
func VersionKey(rk string, seq uint64) string {
	return versionPrefix(rk) + fmt.Sprintf("%0*d", seqWidth, math.MaxInt64-int64(min(seq, math.MaxInt64)))
}

// HistoryAt returns the RowKey range [from, to) of the version rows of rk
// written at or before journal sequence seq, newest first: its first row
// is the row's newest version at seq when the tip is newer.
func HistoryAt(rk string, seq uint64) (from, to string) {
	_, to = HistoryRange(rk)
	return VersionKey(rk, seq), to
}

// HistoryRange returns the RowKey range [from, to) holding every version
// row of rk, newest first.
func HistoryRange(rk string) (from, to string) {
	p := OldPrefix + escapeRK(rk)
	return p + ":", p + ";"
}

// TipRange is the RowKey range [from, to) of all tip rows of a partition.
func TipRange() (from, to string) { return TipPrefix, "tip;" }

func versionPrefix(rk string) string { return OldPrefix + escapeRK(rk) + ":" }

var rkEscaper = strings.NewReplacer("%", "%25", ":", "%3A")
var rkUnescaper = strings.NewReplacer("%25", "%", "%3A", ":")

func escapeRK(rk string) string { return rkEscaper.Replace(rk) }

// ParseKey splits a stored RowKey into the natural RowKey and, for version
// rows, the journal sequence that wrote the version. ok is false for keys
// that are not part of the layout.
func ParseKey(key string) (rk string, seq uint64, tip bool, ok bool) {
	if strings.HasPrefix(key, TipPrefix) {
		return key[len(TipPrefix):], 0, true, true
	}
	if !strings.HasPrefix(key, OldPrefix) {
		return "", 0, false, false
	}
	rest := key[len(OldPrefix):]
	i := strings.LastIndexByte(rest, ':')
	if i < 0 || len(rest)-i-1 != seqWidth {
		return "", 0, false, false
	}
	inv, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil || inv < 0 {
		return "", 0, false, false
	}
	return rkUnescaper.Replace(rest[:i]), uint64(math.MaxInt64 - inv), false, true
}

// Row is one version of a logical row as stored, in the layout layer: the
// tip, a version row or a tombstone, with its system columns decoded and
// the user properties (an edm.Entity, as the command wrote them) apart.
// It is a store.Entity read by the layout (DecodeRow) and written back as
// one (PK, the RowKey of TipKey or VersionKey, and Encode); the store below
// holds entities and knows nothing of versions.
type Row struct {
	PK, RK  string
	Version int64
	Cmd     string
	Seq     uint64
	At      time.Time
	Op      events.OpKind
	// Deleted marks a tombstone: Props are the last values of the deleted
	// row and Cmd the deleting command.
	Deleted bool
	// Tip is true for the tip row (the current version).
	Tip   bool
	Props edm.Entity
	// ETag is the store's etag of this stored row.
	ETag string
}

// DecodeRow reads a stored entity of the layout. It fails on an entity that
// is not part of the layout or lacks its system columns.
func DecodeRow(e store.Entity) (Row, error) {
	rk, seq, tip, ok := ParseKey(e.RK)
	if !ok {
		return Row{}, &ForeignRowError{PK: e.PK, Key: e.RK, Why: "is not a tip or version row"}
	}
	r := Row{PK: e.PK, RK: rk, Tip: tip, ETag: e.ETag, Props: make(edm.Entity, len(e.Props))}
	for name, val := range e.Props {
		if !strings.HasPrefix(name, "_") {
			r.Props[name] = val
		}
	}
	sv, ok1 := e.Props[ColVersion]
	sc, ok2 := e.Props[ColCmd]
	ss, ok3 := e.Props[ColSeq]
	sa, ok4 := e.Props[ColAt]
	so, ok5 := e.Props[ColOp]
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return Row{}, &ForeignRowError{PK: e.PK, Key: e.RK, Why: "lacks the system columns"}
	}
	r.Version, r.Cmd, r.Seq, r.At, r.Op = sv.Int, sc.Str, uint64(ss.Int), sa.Time, events.OpKind(so.Str)
	if d, ok := e.Props[ColDeleted]; ok && d.Bool {
		r.Deleted = true
	}
	if !tip && seq != r.Seq {
		return Row{}, fmt.Errorf("%w: row %q/%q: its key says journal sequence %d, its _seq %d (a table of the version-keyed layout? move it with replay rebuild --into)",
			ErrLayout, e.PK, e.RK, seq, r.Seq)
	}
	return r, nil
}

// Encode returns the stored properties of r: its user properties plus the
// system columns.
func (r Row) Encode() edm.Entity {
	p := make(edm.Entity, len(r.Props)+events.SystemColumns)
	for k, v := range r.Props {
		p[k] = v
	}
	sys, n := r.SystemColumns()
	for _, c := range sys[:n] {
		p[c.Name] = c.Value
	}
	return p
}

// A Column is one stored property.
type Column struct {
	Name  string
	Value edm.Value
}

// SystemColumns returns the system columns Encode adds to r's user
// properties, as sys[:n]: what a row costs can be known without building
// its entity.
func (r Row) SystemColumns() (sys [events.SystemColumns]Column, n int) {
	sys = [events.SystemColumns]Column{
		{ColVersion, edm.Int64(r.Version)},
		{ColCmd, edm.String(r.Cmd)},
		{ColSeq, edm.Int64(int64(r.Seq))},
		{ColAt, edm.DateTime(r.At)},
		{ColOp, edm.String(string(r.Op))},
		{ColDeleted, edm.Bool(true)},
	}
	n = len(sys)
	if !r.Deleted {
		n--
	}
	return sys, n
}

// StoreKey is the RowKey this version of the row is stored under.
func (r Row) StoreKey() string {
	if r.Tip {
		return TipKey(r.RK)
	}
	return VersionKey(r.RK, r.Seq)
}

// FenceKey is the RowKey of a partition's fence row. The fence is the
// projector's bookkeeping, not a logical row: it sorts outside the tip and
// version ranges of SPEC §4, so listings of current rows and histories
// never meet it. It holds the system columns _seq, _cmd and _at of the
// newest command applied to the partition, a pure function of the journal
// like every other row.
//
// Every transaction the projector commits in a partition writes the fence
// on the condition that it still has the etag the projector's view of the
// partition was taken at (an insert when there was none). So a transaction
// commits only on the state it was decided on: two projectors that apply
// one partition at the same time serialize on the fence, and the one whose
// view is stale fails, reloads and finds its commands already handled. See
// docs/ARCHITECTURE.md, "Exactly once".
const FenceKey = "fence"

// FenceKeyEnd is the first RowKey after FenceKey: a range read to it ends
// with the fence, and [FenceKey, FenceKeyEnd) holds the fence alone.
const FenceKeyEnd = "fencf"

// IsLayoutKey reports whether a stored RowKey is a tip or version row of
// the layout, as opposed to the partition's fence.
func IsLayoutKey(rk string) bool {
	_, _, _, ok := ParseKey(rk)
	return ok
}
