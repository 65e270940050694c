package retention_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestPrunedReplay runs a prune through the whole pipeline: the projector
// applies it, reads before its horizon answer ErrPruned naming it, reads
// from it answer, and verify finds the rebuilt table equal to the live one.
func TestPrunedReplay(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot|replaytest.Retention))
			table := replaytest.UniqueTable("Pruned")
			var cmds []*events.Command
			for i := range 40 {
				pk := []string{"a", "b"}[i%2]
				cmds = append(cmds, &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: pk,
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%3), Entity: edm.Entity{"n": edm.Int64(int64(i))}}}})
			}
			seqs := e.Publish(cmds)
			horizon := seqs[29]
			prune := &events.Command{ID: table + "-prune", Table: table, PK: "a", Prune: &events.Prune{Horizon: horizon}}
			more := []*events.Command{prune, {ID: table + "-after", Table: table, PK: "a",
				Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r0", Entity: edm.Entity{"n": edm.Int64(99)}}}}}
			e.Publish(more)
			ids := []string{prune.ID, more[1].ID}
			for _, c := range cmds {
				ids = append(ids, c.ID)
			}
			outs := e.Await(ids)
			if o := outs[prune.ID]; o.Status != wire.StatusApplied || o.Pruned == 0 {
				t.Fatalf("prune outcome %+v", o)
			}
			h, err := rows.ReadHorizon(e.Ctx, e.Store, table, "a")
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
			isPruned("asof partition", e.Hist.AsOf(e.Ctx, table, store.InPartition("a"), horizon-1, none))
			isPruned("asof table", e.Hist.AsOf(e.Ctx, table, store.AllPartitions, seqs[0], none))
			_, err = e.Hist.Blame(e.Ctx, cmds[0].ID)
			isPruned("blame", err)
			_, err = e.Repair.PlanUndo(e.Ctx, cmds[2].ID, repair.UndoOptions{})
			isPruned("undo", err)
			_, err = e.Repair.PlanRestore(e.Ctx, table, store.InPartition("a"), seqs[4])
			isPruned("restore", err)
			_, err = e.Snap.Take(e.Ctx, io.Discard, snapshot.Config{Table: table, Seq: horizon - 1})
			isPruned("snapshot", err)
			// The other partition, and the pruned one from its horizon on.
			if err := e.Hist.AsOf(e.Ctx, table, store.InPartition("b"), seqs[1], none); err != nil {
				t.Fatal(err)
			}
			n := 0
			if err := e.Hist.AsOf(e.Ctx, table, store.InPartition("a"), horizon, func(rows.Row) error { n++; return nil }); err != nil || n != 3 {
				t.Fatalf("asof at the horizon: %d rows, %v", n, err)
			}
			st, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: table})
			if err != nil || st.Missing+st.Extra+st.Changed != 0 || st.Rows == 0 {
				t.Fatalf("verify after a prune: %+v %v", st, err)
			}
		})
	}
}

// TestPrunePolicy runs replay's prune policy: a dry run counts, --apply
// publishes one prune per partition, a second run finds nothing left, and
// the table still equals its rebuild. On a plain table (SPEC §4) the
// prune reads and prunes its history, and the table itself, which holds
// no history, is not touched.
func TestPrunePolicy(t *testing.T) {
	for _, b := range replaytest.Stores() {
		for _, layout := range []wire.Layout{wire.LayoutVersioned, wire.LayoutPlain} {
			t.Run(b.Name+"/"+string(layout), func(t *testing.T) { testPrunePolicy(t, b, layout) })
		}
	}
}

func testPrunePolicy(t *testing.T, b replaytest.Backend, layout wire.Layout) {
	e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot|replaytest.Retention))
	table := replaytest.UniqueTable("Policy")
	e.SetLayout(e.Ctx, table, layout)
	vt := projectiontest.VersionTable(t, table, layout)
	var cmds []*events.Command
	var ids []string
	for i := range 60 {
		c := &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: []string{"a", "b", "c"}[i%3],
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%2), Entity: edm.Entity{"n": edm.Int64(int64(i))}}}}
		if i == 30 {
			c.Ops[0] = events.RowOp{Op: events.OpDelete, RK: "r0"}
		}
		cmds = append(cmds, c)
		ids = append(ids, c.ID)
	}
	e.Publish(cmds)
	e.Await(ids)
	current := replaytest.AllRows(t, e.Ctx, e.Store, table)
	// Each partition holds two rows of 10 versions each; keeping
	// 3 versions of every row removes 7 of each.
	// At most 5 rows per prune command: 3 prunes of each partition's 14.
	cfg := retention.PruneConfig{Table: table, Partition: store.AllPartitions, KeepVersions: 3, Pace: time.Millisecond, MaxRows: 5}
	plan, err := e.Pruner.PlanPrune(e.Ctx, cfg)
	if err != nil || len(plan.Partitions) != 3 || plan.Rows != 3*2*7 || len(plan.Partitions[0].Horizons) != 3 {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	res, err := plan.Apply(e.Ctx)
	if err != nil || len(res.Published) != 9 || len(res.Counts) != 3 {
		t.Fatalf("apply: %+v %v, the plan said %+v", res, err, plan)
	}
	for _, c := range res.Counts {
		if c.N != 14 {
			t.Fatalf("applied %+v, want 14 rows removed", c)
		}
	}
	for _, pub := range res.Published {
		if pub.Outcome.Pruned > 5 || pub.Duplicate {
			t.Fatalf("prune %+v removed more than 5 rows, or was published before", pub)
		}
	}
	// Every row keeps 3 versions.
	for _, pk := range []string{"a", "b", "c"} {
		byRK, err := rows.ReadPartition(e.Ctx, e.Store, vt, pk)
		if err != nil {
			t.Fatal(err)
		}
		for rk, rs := range byRK {
			if len(rs) != 3 {
				t.Fatalf("%s/%s keeps %d versions, want 3", pk, rk, len(rs))
			}
		}
	}
	if layout == wire.LayoutPlain {
		replaytest.SameTables(t, "the plain table after the prune", replaytest.AllRows(t, e.Ctx, e.Store, table), current)
	}
	// Resumable: nothing is left to do.
	again, err := e.Pruner.PlanPrune(e.Ctx, cfg)
	if err != nil || len(again.Partitions) != 0 || again.Preview().Blocked == "" {
		t.Fatalf("second run: %+v %v", again, err)
	}
	if _, err := plan.Apply(e.Ctx); !errors.Is(err, replay.ErrStale) {
		t.Fatalf("the first plan applied again: %v, want ErrStale", err)
	}
	// By age: with the clock an hour on, everything is older than 30m.
	age := retention.PruneConfig{Table: table, Partition: store.InPartition("a"), Keep: 30 * time.Minute,
		Now: func() time.Time { return time.Now().Add(time.Hour) }}
	st4, err := e.Pruner.PlanPrune(e.Ctx, age)
	if err != nil || st4.Rows != 2*2 {
		t.Fatalf("keep 30m an hour later: %+v %v, want the 2 older versions of each row", st4, err)
	}
	vs, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: table})
	if err != nil || vs.Missing+vs.Extra+vs.Changed != 0 {
		t.Fatalf("verify: %+v %v", vs, err)
	}
}

// TestPrunedCopy: a copy of a pruned table, by snapshot and load or by
// rebuild from the snapshot, keeps the prune horizon (issue 28, item 1):
// it refuses the points the original refuses, answers from the horizon on,
// and diff finds no difference, fences included.
func TestPrunedCopy(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot|replaytest.Retention))
			table := replaytest.UniqueTable("Prcopy")
			var cmds []*events.Command
			var ids []string
			for i := range 12 {
				c := &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: []string{"a", "b"}[i%2],
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int64(int64(i))}}}}
				cmds = append(cmds, c)
				ids = append(ids, c.ID)
			}
			seqs := e.Publish(cmds)
			e.Await(ids)
			cfg := retention.PruneConfig{Table: table, Partition: store.AllPartitions, KeepVersions: 2, Pace: time.Millisecond}
			plan, err := e.Pruner.PlanPrune(e.Ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := plan.Apply(e.Ctx); err != nil {
				t.Fatal(err)
			}
			h, err := rows.ReadHorizon(e.Ctx, e.Store, table, "a")
			if err != nil || h.Seq == 0 {
				t.Fatalf("horizon %+v %v", h, err)
			}
			var snap strings.Builder
			st, err := e.Snap.Take(e.Ctx, &snap, snapshot.Config{Table: table})
			if err != nil {
				t.Fatal(err)
			}
			loaded := replaytest.UniqueTable("Prcopyload")
			if _, err := e.Snap.Load(e.Ctx, strings.NewReader(snap.String()), snapshot.LoadConfig{Into: loaded}); err != nil {
				t.Fatal(err)
			}
			rebuilt := replaytest.UniqueTable("Prcopyrebuilt")
			if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Into: rebuilt, Snapshot: strings.NewReader(snap.String())}); err != nil {
				t.Fatal(err)
			}
			none := func(rows.Row) error { return nil }
			for _, copy := range []string{table, loaded, rebuilt} {
				err := e.Hist.AsOf(e.Ctx, copy, store.InPartition("a"), seqs[0], none)
				var pe *replay.PrunedError
				if !errors.As(err, &pe) || pe.Horizon != h {
					t.Fatalf("asof %s before the horizon: %v, want the pruned error of horizon %+v", copy, err, h)
				}
				if err := e.Hist.AsOf(e.Ctx, copy, store.InPartition("a"), h.Seq, none); err != nil {
					t.Fatalf("asof %s at the horizon: %v", copy, err)
				}
				if copy == table {
					continue
				}
				d, err := e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: table, Against: copy, Seq: st.Header.Seq})
				if err != nil || d.Missing+d.Extra+d.Changed != 0 {
					t.Fatalf("diff %s against %s: %+v %v", table, copy, d, err)
				}
			}
		})
	}
}

// TestPruneErasedPartition: partitions holding erase markers (a whole
// partition erased, then written again; one row erased) are pruned like
// any other, and so are the partitions sorting after them (issue 36, item
// 6: the prune stopped at the marker, "not a tip or version row").
func TestPruneErasedPartition(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Retention|replaytest.Rebuild))
			table := replaytest.UniqueTable("PruneErased")
			var cmds []*events.Command
			for i := range 12 {
				cmds = append(cmds, &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: []string{"a", "b", "c"}[i%3],
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int64(int64(i))}}}})
			}
			publish := func(cmds []*events.Command) {
				var ids []string
				for _, c := range cmds {
					ids = append(ids, c.ID)
				}
				e.Publish(cmds)
				e.Await(ids)
			}
			publish(cmds)
			rk := "r"
			for _, er := range []*events.Erase{{ID: table + "-erase-a", Table: table, PK: "a"}, {ID: table + "-erase-b", Table: table, PK: "b", RK: &rk}} {
				res, err := e.Writer.PublishErase(e.Ctx, er)
				if err != nil {
					t.Fatal(err)
				}
				if o := e.Await([]string{er.ID})[er.ID]; o.Status != wire.StatusApplied || o.Seq != res.Seq {
					t.Fatalf("erase %s: %+v", er.ID, o)
				}
			}
			// Written again after the erases: versions to prune in a and b.
			cmds = nil
			for i := 12; i < 24; i++ {
				cmds = append(cmds, &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: []string{"a", "b", "c"}[i%3],
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int64(int64(i))}}}})
			}
			publish(cmds)
			cfg := retention.PruneConfig{Table: table, Partition: store.AllPartitions, KeepVersions: 1, Pace: time.Millisecond}
			plan, err := e.Pruner.PlanPrune(e.Ctx, cfg)
			// a and b: 4 versions since the erase, 3 removed; c: 8, 7 removed.
			if err != nil || len(plan.Partitions) != 3 || plan.Rows != 3+3+7 {
				t.Fatalf("prune plan: %+v, %v", plan, err)
			}
			if _, err := plan.Apply(e.Ctx); err != nil {
				t.Fatalf("prune: %v", err)
			}
			for _, pk := range []string{"a", "b", "c"} {
				byRK, err := rows.ReadPartition(e.Ctx, e.Store, table, pk)
				if err != nil {
					t.Fatal(err)
				}
				if len(byRK["r"]) != 1 {
					t.Errorf("%s/r keeps %d versions, want 1", pk, len(byRK["r"]))
				}
			}
			for pk, key := range map[string]string{"a": rows.ErasedKey, "b": rows.ErasedRowKey("r")} {
				if _, err := e.Store.Get(e.Ctx, table, pk, key); err != nil {
					t.Errorf("the erase marker of %s after the prune: %v", pk, err)
				}
			}
			vs, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: table})
			if err != nil || !vs.Identical() {
				t.Fatalf("verify: %+v %v", vs, err)
			}
		})
	}
}
