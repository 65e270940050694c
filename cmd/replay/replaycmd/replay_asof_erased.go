package replaycmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
)

// erasedRow is the answer of asof of one row that AsOfRow did not find
// (SPEC §10): the erase that removed it, if one did. A row deleted later
// by a command keeps its tombstone answer; a point before the prune
// horizon answers erased when an erase after the point removed the row,
// since the erase is what took its state for good.
func (c *asofCmd) erasedRow(ctx context.Context, seq uint64, row rows.Row, ok bool, err error) error {
	switch {
	case err == nil && !ok && !row.Deleted:
		return c.rp.Erased(ctx, c.table, c.pk, c.rk, 0) // gone because erased?
	case errors.Is(err, replay.ErrPruned):
		if e := c.rp.Erased(ctx, c.table, c.pk, c.rk, seq); e != nil {
			return e
		}
	}
	return err
}

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
