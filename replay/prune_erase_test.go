package replay_test

import (
	"fmt"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
)

// TestPruneThenErase: a partition pruned, then one of its rows erased, then
// the whole partition erased, still equals its rebuild after each step
// (found by trying it: the fence kept a prune count that counted the erased
// row's versions, and, after a partition erase, the horizon of a prune the
// erase had taken out of the journal). An erase keeps the horizon (and the
// prunes in the journal) and zeroes the count; verify compares every column.
func TestPruneThenErase(t *testing.T) {
	for _, b := range stores() {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b.open(t), journal.Config{AllowMsgDelete: true})
			table := uniqueTable("PruneErase")
			var cmds []*events.Command
			for i := range 12 {
				cmds = append(cmds, &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: "p",
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%2), Entity: events.Entity{"n": events.Int64(int64(i))}}}})
			}
			seqs := e.publish(cmds)
			prune := &events.Command{ID: table + "-prune", Table: table, PK: "p", Prune: &events.Prune{Horizon: seqs[8]}}
			e.publish([]*events.Command{prune})
			ids := []string{prune.ID}
			for _, c := range cmds {
				ids = append(ids, c.ID)
			}
			if o := e.awaitOutcomes(ids)[prune.ID]; o.Status != journal.StatusApplied || o.Pruned == 0 {
				t.Fatalf("prune outcome %+v", o)
			}
			verify := func(step string) {
				t.Helper()
				st, err := e.rp.Verify(e.ctx, replay.VerifyConfig{Table: table})
				if err != nil || st.Missing+st.Extra+st.Changed != 0 {
					t.Fatalf("verify after %s: %+v %v", step, st, err)
				}
			}
			verify("the prune")

			rk := "r1"
			if _, err := e.rp.EraseKey(e.ctx, replay.EraseTarget{Table: table, PK: "p", RK: &rk}, nil); err != nil {
				t.Fatal(err)
			}
			verify("a row erase")
			if h, err := rows.ReadHorizon(e.ctx, e.st, table, "p"); err != nil || h.Seq != seqs[8] || h.Cmd != prune.ID || h.Removed != 0 {
				t.Fatalf("horizon after a row erase: %+v %v, want seq %d by %s, no count", h, err, seqs[8], prune.ID)
			}

			if _, err := e.rp.EraseKey(e.ctx, replay.EraseTarget{Table: table, PK: "p"}, nil); err != nil {
				t.Fatal(err)
			}
			verify("a partition erase")
			if h, err := rows.ReadHorizon(e.ctx, e.st, table, "p"); err != nil || h.Seq != seqs[8] || h.Removed != 0 {
				t.Fatalf("horizon after a partition erase: %+v %v, want seq %d and no count", h, err, seqs[8])
			}
		})
	}
}
