package erasure_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestErasePrune: a prune, then an erase of a row, then of the whole
// partition, in the same partition (SPEC §4, §10). After each the fence
// holds both the prune horizon (_pruneSeq) and the newest erase
// (_eraseSeq); asof answers pruned before the horizon, erased before an
// erase of what was asked (the erase winning over the prune), the state
// with the erased row listed in between; a rebuild equals the live table.
func TestErasePrune(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Rebuild|replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
			ctx := e.Ctx
			table := replaytest.UniqueTable("ErasePrune")
			var cmds []*events.Command
			for i := range 30 {
				cmds = append(cmds, upsert(fmt.Sprintf("%s-a%d", table, i), table, "a", fmt.Sprintf("r%d", i%3), fmt.Sprint(i)))
			}
			cmds = append(cmds, upsert(table+"-b", table, "b", "r0", "b"))
			seqs := e.Publish(cmds)
			horizon := seqs[20]
			prune := &events.Command{ID: table + "-prune", Table: table, PK: "a", Prune: &events.Prune{Horizon: horizon}}
			e.Publish([]*events.Command{prune})
			if o := e.Await(append(ids(cmds), prune.ID))[prune.ID]; o.Status != wire.StatusApplied || o.Pruned == 0 {
				t.Fatalf("prune outcome %+v", o)
			}
			// fenceHas checks the fence of a against the horizon and the
			// newest erase.
			fenceHas := func(when string, eraseSeq uint64) {
				t.Helper()
				f, err := e.Store.Get(ctx, table, "a", rows.FenceKey)
				if err != nil {
					t.Fatal(err)
				}
				h := rows.HorizonOf(f.Props)
				es := f.Props[rows.ColEraseSeq]
				// An erase resets the prune's count (a rebuild without the
				// erased commands counts fewer), so verify compares it too.
				if h.Seq != horizon || h.Cmd != prune.ID || eraseSeq != 0 && (es.Type != edm.TypeInt64 || uint64(es.Int) != eraseSeq || h.Removed != 0) {
					t.Errorf("%s: fence %v, want _pruneSeq %d by %s, _eraseSeq %d and _pruneRemoved 0 after an erase", when, f.Props, horizon, prune.ID, eraseSeq)
				}
			}
			fenceHas("after the prune", 0)
			before, between := seqs[5], seqs[25] // before the horizon; after it
			isPruned := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, replay.ErrPruned) {
					t.Errorf("%s: %v, want pruned", what, err)
				}
			}
			isErased := func(what string, err error, seq uint64) {
				t.Helper()
				var ee *replay.ErasedError
				if !errors.As(err, &ee) || !errors.Is(err, replay.ErrErased) || ee.Seq != seq {
					t.Errorf("%s: %v, want erased at seq %d", what, err, seq)
				}
			}
			// asof of a, with the erasures it lists.
			asof := func(part store.Partition, seq uint64) (got []string, gone []*replay.ErasedError, err error) {
				err = e.Hist.AsOfErasures(ctx, table, part, seq, func(g []*replay.ErasedError) error { gone = g; return nil },
					func(r rows.Row) error { got = append(got, r.PK+"/"+r.RK); return nil })
				return got, gone, err
			}

			// verify checks that a rebuild of the journal equals the table.
			verify := func(when string) {
				t.Helper()
				e.WaitProjected(ctx)
				st, err := e.Rebuild.Verify(ctx, rebuild.VerifyConfig{Table: table, OnDiff: func(d rebuild.Difference) error {
					t.Errorf("%s: the rebuild differs at %s/%s: columns %v", when, d.PK, d.Key, d.Columns)
					return nil
				}})
				if err != nil || !st.Identical() {
					t.Errorf("verify %s: %+v, %v", when, st, err)
				}
			}
			verify("after the prune")
			rk := "r1"
			rRec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "a", RK: &rk}, nil)
			if err != nil {
				t.Fatalf("erase the row: %v", err)
			}
			fenceHas("after the row erase", rRec.EraseSeq)
			checkNotice(t, changeEvents(t, ctx, e.JS, table, "a"), rRec.EraseSeq, rRec.EraseID, &rk)
			verify("after the row erase")
			_, _, err = asof(store.InPartition("a"), before)
			isPruned("asof of a before the horizon, a row erased", err)
			got, gone, err := asof(store.InPartition("a"), between)
			if err != nil || fmt.Sprint(got) != "[a/r0 a/r2]" || len(gone) != 1 || gone[0].RK == nil || *gone[0].RK != "r1" || gone[0].Seq != rRec.EraseSeq {
				t.Errorf("asof of a between the horizon and the row erase: %v %v %v", got, gone, err)
			}
			if _, ok, err := e.Hist.AsOfRow(ctx, table, "a", "r1", between); err != nil || ok {
				t.Errorf("asof of the erased row: found %v, %v", ok, err)
			}
			isErased("the erased row at a point between", e.Hist.Erased(ctx, table, "a", "r1", between), rRec.EraseSeq)
			if _, ok, err := e.Hist.AsOfRow(ctx, table, "a", "r0", between); err != nil || !ok {
				t.Errorf("asof of a row beside the erased one: found %v, %v", ok, err)
			}

			pRec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "a"}, nil)
			if err != nil {
				t.Fatalf("erase the partition: %v", err)
			}
			fenceHas("after the partition erase", pRec.EraseSeq)
			// The partition's events before its erase are gone, the row
			// erase's notice with them; its own notice stays.
			evs := changeEvents(t, ctx, e.JS, table, "a")
			checkNotice(t, evs, pRec.EraseSeq, pRec.EraseID, nil)
			if len(evs) != 1 {
				t.Errorf("change events of the erased partition: %+v, want its notice alone", evs)
			}
			verify("after the partition erase")
			_, _, err = asof(store.InPartition("a"), before)
			isErased("asof of a before the horizon and the erase", err, pRec.EraseSeq)
			_, _, err = asof(store.InPartition("a"), between)
			isErased("asof of a before the erase", err, pRec.EraseSeq)
			got, gone, err = asof(store.AllPartitions, before)
			if err != nil || fmt.Sprint(got) != "[]" || len(gone) == 0 || gone[0].PK != "a" || gone[0].RK != nil {
				t.Errorf("asof of the table before the horizon (b not yet written): %v %v %v", got, gone, err)
			}
			got, gone, err = asof(store.AllPartitions, pRec.EraseSeq)
			if err != nil || fmt.Sprint(got) != "[b/r0]" || len(gone) != 0 {
				t.Errorf("asof of the table at the erase: %v %v %v", got, gone, err)
			}

			// Written afresh after the erase, with the fence keeping both.
			again := upsert(table+"-again", table, "a", "r0", "new")
			e.Publish([]*events.Command{again})
			e.Await([]string{again.ID})
			fenceHas("after a write", pRec.EraseSeq)
			got, _, err = asof(store.InPartition("a"), 1<<62)
			if err != nil || fmt.Sprint(got) != "[a/r0]" {
				t.Errorf("asof of a now: %v %v", got, err)
			}
			verify("after the prune and the erases")
		})
	}
}
