package snapshot

import (
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// format1 moves the rows of a format-1 snapshot to the layout keyed by
// sequence as Load reads them. Format 1 keyed version rows by inverted
// version, and a command that named a row several times left one version
// row per op, all with its _seq; in the layout keyed by sequence a command
// makes one version of a row. So each version row is rekeyed by its _seq,
// and a version whose next newer version carries the same _seq (an
// intermediate state inside one command, never visible at any journal
// sequence) is left out: the loaded table has the same state at every
// sequence, and its _v keep their numbers.
//
// A snapshot holds, per partition, the tips before the version rows, and
// each row's version rows newest first (snapRange), so the next newer
// version of a version row is the one read just before it, or for a row's
// newest version row, its tip. The tips' sequences are kept until the end
// of the load: memory in proportion to the rows, for old files only.
type format1 struct {
	tips map[[2]string]uint64 // (pk, rk) → _seq of the tip
	last map[string]seen      // pk → the version row read last
}

type seen struct {
	rk  string
	seq uint64
}

func newFormat1() *format1 {
	return &format1{tips: make(map[[2]string]uint64), last: make(map[string]seen)}
}

// move returns e in the layout keyed by sequence; keep is false for an
// intermediate version, which is left out.
func (f *format1) move(e store.Entity) (moved store.Entity, keep bool) {
	rk, _, tip, ok := rows.ParseKey(e.RK) // the number is a version here; unused
	if !ok {
		return e, true // not of the layout: loaded as it is
	}
	seq := uint64(e.Props[rows.ColSeq].Int)
	if tip {
		f.tips[[2]string{e.PK, rk}] = seq
		return e, true
	}
	prev, ok := f.last[e.PK]
	newer, hasNewer := prev.seq, ok && prev.rk == rk
	if !hasNewer {
		newer, hasNewer = f.tips[[2]string{e.PK, rk}]
	}
	f.last[e.PK] = seen{rk, seq}
	if hasNewer && newer == seq {
		return e, false
	}
	e.RK = rows.VersionKey(rk, seq)
	return e, true
}
