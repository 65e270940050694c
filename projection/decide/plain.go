package decide

import (
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// PlainRow is what a plain table (SPEC §4, "The plain layout") holds at a
// row's own key, as the projector last read or wrote it: whether the row
// exists, its _seq, and its etag, on which the next write is conditional.
type PlainRow struct {
	Exists bool
	Seq    uint64
	ETag   string
}

// PlainOp is the write that brings a plain table's row rk from cur to the
// history's state st, if any. It only moves the row forward: a row with a
// tip is replaced (conditional on cur's etag) or inserted unless the
// table's _seq is at or past the tip's; a row without one is deleted
// (conditional on the etag) unless the table's is newer than upTo, the
// fence the history's states were read under, and than its tombstone.
func PlainOp(rk string, st *rows.State, cur PlainRow, upTo uint64) (store.Op, bool) {
	if tip := st.Tip; tip != nil {
		switch {
		case cur.Exists && cur.Seq >= tip.Seq:
			return store.Op{}, false // there already, or a newer owner wrote past it
		case cur.Exists:
			return store.Op{Kind: store.Replace, RK: rk, Props: rows.PlainProps(*tip), IfMatch: cur.ETag}, true
		}
		return store.Op{Kind: store.Insert, RK: rk, Props: rows.PlainProps(*tip)}, true
	}
	if l := st.Latest; l != nil {
		upTo = max(upTo, l.Seq)
	}
	if !cur.Exists || cur.Seq > upTo {
		return store.Op{}, false
	}
	return store.Op{Kind: store.Delete, RK: rk, IfMatch: cur.ETag}, true
}
