package replaycmd

import (
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/replay"
)

// erasedOut is one erasure after the point of asof over a partition or
// table: a whole partition (rk absent) or one row.
type erasedOut struct {
	Cmd string  `json:"cmd"`
	PK  string  `json:"pk"`
	RK  *string `json:"rk,omitempty"`
	Seq uint64  `json:"seq"`
}

func erasedList(gone []*replay.ErasedError) []erasedOut {
	out := make([]erasedOut, 0, len(gone))
	for _, g := range gone {
		out = append(out, erasedOut{Cmd: g.Cmd, PK: g.PK, RK: g.RK, Seq: g.Seq})
	}
	return out
}

// erasedText prints the erasures after the point, one line each, after
// the rows of asof over a partition or table.
func erasedText(w io.Writer, gone []erasedOut) {
	for _, g := range gone {
		if g.RK == nil {
			fmt.Fprintf(w, "erased after this point: partition %q, by command %s at seq %d\n", g.PK, g.Cmd, g.Seq)
			continue
		}
		fmt.Fprintf(w, "erased after this point: row %q/%q, by command %s at seq %d\n", g.PK, *g.RK, g.Cmd, g.Seq)
	}
}
