package rows

import (
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// Erase markers (SPEC §10): the row an erase leaves in its partition, so
// that time travel can say "erased by command X at seq N" with one point
// read, and rebuilds and snapshots reproduce it. A marker holds the system
// columns _seq, _cmd and _at of the erase, no user property. Its key sorts
// outside the tip and version ranges, like the fence.
const (
	// ErasedKey is the RowKey of the marker of a whole-partition erase.
	ErasedKey = "erased"
	// ErasedPrefix begins the RowKey of the marker of a one-row erase.
	ErasedPrefix = "erased:"
	// ColEraseSeq is the fence column holding the sequence of the
	// partition's newest erase: every command at or below it was handled
	// before the erase, whatever rows are left of it.
	ColEraseSeq = "_eraseSeq"
)

// ErasedRowKey is the RowKey of the marker of rk's erase; rk is escaped as
// in version rows.
func ErasedRowKey(rk string) string { return ErasedPrefix + escapeRK(rk) }

// ErasedRange is the RowKey range [from, to) of a partition's markers,
// the whole-partition one included.
func ErasedRange() (from, to string) { return ErasedKey, "erased;" }

// Marker is an erase marker.
type Marker struct {
	Seq uint64
	Cmd string
	At  time.Time
}

// Encode returns the marker's columns.
func (m Marker) Encode() edm.Entity {
	return edm.Entity{
		ColSeq: edm.Int64(int64(m.Seq)),
		ColCmd: edm.String(m.Cmd),
		ColAt:  edm.DateTime(m.At),
	}
}

// DecodeMarker reads a marker's columns; ok is false when they are missing.
func DecodeMarker(e store.Entity) (m Marker, ok bool) {
	s, ok1 := e.Props[ColSeq]
	c, ok2 := e.Props[ColCmd]
	a, ok3 := e.Props[ColAt]
	if !ok1 || !ok2 || !ok3 || s.Type != edm.TypeInt64 || c.Type != edm.TypeString {
		return Marker{}, false
	}
	return Marker{Seq: uint64(s.Int), Cmd: c.Str, At: a.Time}, true
}

// IsErasedKey reports whether a stored RowKey is an erase marker's.
func IsErasedKey(rk string) bool {
	return rk == ErasedKey || strings.HasPrefix(rk, ErasedPrefix)
}

// MarkerRK returns the natural RowKey a marker's stored key names; whole
// is true for the marker of a whole-partition erase. ok is false for a key
// that is no marker's.
func MarkerRK(key string) (rk string, whole, ok bool) {
	switch {
	case key == ErasedKey:
		return "", true, true
	case strings.HasPrefix(key, ErasedPrefix):
		return rkUnescaper.Replace(key[len(ErasedPrefix):]), false, true
	}
	return "", false, false
}
