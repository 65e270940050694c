package replay_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// TestPrunedReplay runs a prune through the whole pipeline: the projector
// applies it, reads before its horizon answer ErrPruned naming it, reads
// from it answer, and verify finds the rebuilt table equal to the live one.
func TestPrunedReplay(t *testing.T) {
	for _, b := range stores() {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b.open(t))
			table := uniqueTable("Pruned")
			var cmds []*events.Command
			for i := range 40 {
				pk := []string{"a", "b"}[i%2]
				cmds = append(cmds, &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: pk,
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%3), Entity: events.Entity{"n": events.Int64(int64(i))}}}})
			}
			seqs := e.publish(cmds)
			horizon := seqs[29]
			prune := &events.Command{ID: table + "-prune", Table: table, PK: "a", Prune: &events.Prune{Horizon: horizon}}
			more := []*events.Command{prune, {ID: table + "-after", Table: table, PK: "a",
				Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r0", Entity: events.Entity{"n": events.Int64(99)}}}}}
			e.publish(more)
			ids := []string{prune.ID, more[1].ID}
			for _, c := range cmds {
				ids = append(ids, c.ID)
			}
			outs := e.awaitOutcomes(ids)
			if o := outs[prune.ID]; o.Status != journal.StatusApplied || o.Pruned == 0 {
				t.Fatalf("prune outcome %+v", o)
			}
			h, err := rows.ReadHorizon(e.ctx, e.st, table, "a")
			if err != nil || h.Seq != horizon || h.Cmd != prune.ID {
				t.Fatalf("horizon %+v %v", h, err)
			}
			isPruned := func(what string, err error) {
				t.Helper()
				var pe *replay.PrunedError
				if !errors.Is(err, replay.ErrPruned) || !errors.As(err, &pe) || pe.Horizon.Seq != horizon || !strings.Contains(err.Error(), prune.ID) {
					t.Fatalf("%s: %v, want the pruned error naming %s", what, err, prune.ID)
				}
			}
			none := func(rows.Row) error { return nil }
			isPruned("asof partition", e.rp.AsOf(e.ctx, table, store.InPartition("a"), horizon-1, none))
			isPruned("asof table", e.rp.AsOf(e.ctx, table, store.AllPartitions, seqs[0], none))
			_, err = e.rp.Blame(e.ctx, cmds[0].ID)
			isPruned("blame", err)
			_, err = e.rp.PlanUndo(e.ctx, cmds[2].ID, replay.UndoOptions{})
			isPruned("undo", err)
			_, err = e.rp.PlanRestore(e.ctx, table, store.InPartition("a"), seqs[4])
			isPruned("restore", err)
			// The other partition, and the pruned one from its horizon on.
			if err := e.rp.AsOf(e.ctx, table, store.InPartition("b"), seqs[1], none); err != nil {
				t.Fatal(err)
			}
			n := 0
			if err := e.rp.AsOf(e.ctx, table, store.InPartition("a"), horizon, func(rows.Row) error { n++; return nil }); err != nil || n != 3 {
				t.Fatalf("asof at the horizon: %d rows, %v", n, err)
			}
			st, err := e.rp.Verify(e.ctx, replay.VerifyConfig{Table: table})
			if err != nil || st.Missing+st.Extra+st.Changed != 0 || st.Rows == 0 {
				t.Fatalf("verify after a prune: %+v %v", st, err)
			}
		})
	}
}
