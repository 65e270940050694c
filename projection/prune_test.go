package projection_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

var pruneT0 = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

// pruneWorkload is a journal of one partition: random upserts, merges and
// deletes of a few rows, with prunes interleaved whose horizons rise (and
// one that does not).
func pruneWorkload(seed uint64, n int) []projection.Entry {
	rng := rand.New(rand.NewPCG(seed, 19))
	var es []projection.Entry
	exists := map[string]bool{}
	var horizon uint64
	for seq := uint64(1); seq <= uint64(n); seq++ {
		id := fmt.Sprintf("c%d", seq)
		c := &events.Command{ID: id, Table: "pruned", PK: "p"}
		switch {
		case seq > 10 && rng.IntN(8) == 0:
			h := horizon + 1 + uint64(rng.IntN(int(seq-horizon-1)))
			if rng.IntN(5) == 0 {
				h = max(1, horizon/2) // at or below the horizon: removes nothing
			}
			horizon = max(horizon, h)
			c.Prune = &events.Prune{Horizon: h}
		default:
			rk := fmt.Sprintf("r%d", rng.IntN(4))
			op := events.RowOp{Op: events.OpUpsert, RK: rk, Entity: edm.Entity{"n": edm.Int64(int64(seq))}}
			if exists[rk] && rng.IntN(4) == 0 {
				op = events.RowOp{Op: events.OpDelete, RK: rk}
			}
			exists[rk] = op.Op != events.OpDelete
			c.Ops = []events.RowOp{op}
		}
		es = append(es, projection.Entry{Seq: seq, At: pruneT0.Add(time.Duration(seq) * time.Second), ID: id, Cmd: c})
	}
	return es
}

// applyBatched applies entries in batches of random sizes, as the
// projector's fetches cut the journal, and returns the outcomes by seq.
func applyBatched(t *testing.T, a *projection.Applier, es []projection.Entry, seed uint64) map[uint64]projection.Result {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	got := map[uint64]projection.Result{}
	keep := func(_ context.Context, rs []projection.Result) error {
		for _, r := range rs {
			got[r.Seq] = r
		}
		return nil
	}
	for i := 0; i < len(es); {
		j := min(len(es), i+1+rng.IntN(6))
		if err := a.Apply(context.Background(), "pruned", "p", es[i:j], projection.Hooks{BeforeCommit: keep, AfterCommit: keep}); err != nil {
			t.Fatal(err)
		}
		i = j
	}
	return got
}

// stateAt is the state of row rk of partition p at seq: the tip if it is
// not newer, else the newest version row at or before seq.
func stateAt(t *testing.T, st store.Store, rk string, seq uint64) (rows.Row, bool) {
	t.Helper()
	ctx := context.Background()
	tip, err := rows.Reader{Store: st}.Get(ctx, "pruned", "p", rk)
	if err == nil && tip.Seq <= seq {
		return tip, true
	}
	if err != nil && !errors.Is(err, rows.ErrRowNotFound) {
		t.Fatal(err)
	}
	r, ok, err := rows.VersionAt(ctx, st, "pruned", "p", rk, seq)
	if err != nil {
		t.Fatal(err)
	}
	return r, ok
}

func TestPruneEqualsRebuild(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			es := pruneWorkload(1, 120)
			// Live: the journal with its prunes, batched one way.
			live := b.Open(t)
			outs := applyBatched(t, projection.NewApplier(live, projection.ApplierConfig{Logger: projectiontest.QuietLogger()}), es, 1)
			// Rebuild: the same journal, batched another way, in another store.
			rebuilt := b.Open(t)
			applyBatched(t, projection.NewApplier(rebuilt, projection.ApplierConfig{Logger: projectiontest.QuietLogger()}), es, 2)
			projectiontest.CompareStores(t, live, rebuilt, "pruned")
			// Full: the journal without its prunes, every version kept.
			var plain []projection.Entry
			var horizon uint64
			for _, e := range es {
				if e.Cmd.IsPrune() {
					horizon = max(horizon, e.Cmd.Prune.Horizon)
					if o := outs[e.Seq]; o.Status != wire.StatusApplied {
						t.Fatalf("prune at %d: %+v", e.Seq, o)
					}
					continue
				}
				plain = append(plain, e)
			}
			full := b.Open(t)
			applyBatched(t, projection.NewApplier(full, projection.ApplierConfig{Logger: projectiontest.QuietLogger()}), plain, 3)
			h, err := rows.ReadHorizon(ctx, live, "pruned", "p")
			if err != nil || h.Seq != horizon {
				t.Fatalf("horizon %+v (%v), want %d", h, err, horizon)
			}
			// Every state at the horizon or later answers as in full; the
			// rows kept are exactly full's minus the prune set.
			for rk := range 4 {
				rk := fmt.Sprintf("r%d", rk)
				for s := horizon; s <= uint64(len(es)); s++ {
					a, aok := stateAt(t, live, rk, s)
					f, fok := stateAt(t, full, rk, s)
					if aok != fok || aok && (a.Version != f.Version || a.Deleted != f.Deleted || !a.Props.Equal(f.Props)) {
						t.Fatalf("%s at %d: pruned %v %+v, full %v %+v", rk, s, aok, a, fok, f)
					}
				}
			}
			fullRows, err := rows.ReadPartition(ctx, full, "pruned", "p")
			if err != nil {
				t.Fatal(err)
			}
			liveRows, err := rows.ReadPartition(ctx, live, "pruned", "p")
			if err != nil {
				t.Fatal(err)
			}
			removed := rows.PruneSetPartition(fullRows, horizon)
			var nFull, nLive int
			for rk := range fullRows {
				nFull += len(fullRows[rk])
				nLive += len(liveRows[rk])
			}
			if len(removed) == 0 || nLive != nFull-len(removed) {
				t.Fatalf("live holds %d rows; full %d, of which the horizon %d removes %d", nLive, nFull, horizon, len(removed))
			}
			var counted int64
			for _, o := range outs {
				counted += o.Pruned
			}
			if counted != int64(len(removed)) {
				t.Fatalf("outcomes count %d rows pruned, %d were", counted, len(removed))
			}
		})
	}
}

// TestPruneCrash stops the store for good in the middle of a prune of
// several transactions; the prune applied again (redelivered) completes it,
// into the state a rebuild makes, with the same count.
func TestPruneCrash(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			// 260 versions of one row, then a prune of all but the tip: 3
			// transactions of at most 99 deletes.
			var es []projection.Entry
			for seq := uint64(1); seq <= 260; seq++ {
				id := fmt.Sprintf("c%d", seq)
				c := &events.Command{ID: id, Table: "pruned", PK: "p",
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int64(int64(seq))}}}}
				es = append(es, projection.Entry{Seq: seq, At: pruneT0, ID: id, Cmd: c})
			}
			prune := projection.Entry{Seq: 261, At: pruneT0, ID: "prune", Cmd: &events.Command{ID: "prune", Table: "pruned", PK: "p", Prune: &events.Prune{Horizon: 260}}}
			quiet := projection.ApplierConfig{Logger: projectiontest.QuietLogger(), MaxRetry: time.Second}

			rebuilt := b.Open(t)
			ra := projection.NewApplier(rebuilt, quiet)
			for i := 0; i < len(es); i += 20 {
				if err := ra.Apply(ctx, "pruned", "p", es[i:min(i+20, len(es))], projection.Hooks{}); err != nil {
					t.Fatal(err)
				}
			}
			var want int64
			if err := ra.Apply(ctx, "pruned", "p", []projection.Entry{prune}, projection.Hooks{AfterCommit: func(_ context.Context, rs []projection.Result) error {
				want = rs[0].Pruned
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			if want != 259 {
				t.Fatalf("the prune removed %d rows, want 259", want)
			}

			real := b.Open(t)
			fs := newFaultStore(real, 19)
			la := projection.NewApplier(fs, quiet)
			for i := 0; i < len(es); i += 20 {
				if err := la.Apply(ctx, "pruned", "p", es[i:min(i+20, len(es))], projection.Hooks{}); err != nil {
					t.Fatal(err)
				}
			}
			fs.mu.Lock()
			fs.persistentAfter = fs.calls + 1 // the prune's first transaction commits, the second fails
			fs.mu.Unlock()
			if err := la.Apply(ctx, "pruned", "p", []projection.Entry{prune}, projection.Hooks{}); !errors.Is(err, errDiskOnFire) {
				t.Fatalf("prune over a failing store: %v", err)
			}
			h, err := rows.ReadHorizon(ctx, real, "pruned", "p")
			if err != nil || h.Seq != 260 || h.Cmd != "prune" || h.Removed != 99 {
				t.Fatalf("after the crash the fence says %+v (%v): want the horizon and 99 removed", h, err)
			}
			// Readers at the horizon or later still answer.
			if r, ok := stateAt(t, real, "r", 260); !ok || r.Version != 259 {
				t.Fatalf("state at the horizon after the crash: %+v %v", r, ok)
			}
			if r, ok := stateAt(t, real, "r", 259); !ok || r.Version != 258 {
				t.Fatalf("state at 259 after the crash: %+v %v", r, ok)
			}
			// Restart: a fresh applier, the prune redelivered.
			var got int64
			if err := projection.NewApplier(real, quiet).Apply(ctx, "pruned", "p", []projection.Entry{prune}, projection.Hooks{AfterCommit: func(_ context.Context, rs []projection.Result) error {
				got = rs[0].Pruned
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("resumed prune reports %d rows, the rebuild %d", got, want)
			}
			projectiontest.CompareStores(t, real, rebuilt, "pruned")
			// Redelivered once more: handled, nothing written, same count.
			got = -1
			if err := projection.NewApplier(real, quiet).Apply(ctx, "pruned", "p", []projection.Entry{prune}, projection.Hooks{AfterCommit: func(_ context.Context, rs []projection.Result) error {
				got = rs[0].Pruned
				return nil
			}}); err != nil || got != want {
				t.Fatalf("redelivered prune: %v, count %d", err, got)
			}
			projectiontest.CompareStores(t, real, rebuilt, "pruned")
		})
	}
}

// TestPruneFutureHorizon: a horizon not below its own sequence is rejected
// by its rule, and nothing is written.
func TestPruneFutureHorizon(t *testing.T) {
	st := backends()[0].Open(t)
	e := projection.Entry{Seq: 5, At: pruneT0, ID: "p5", Cmd: &events.Command{ID: "p5", Table: "pruned", PK: "p", Prune: &events.Prune{Horizon: 5}}}
	var got projection.Result
	err := projection.NewApplier(st, projection.ApplierConfig{}).Apply(context.Background(), "pruned", "p", []projection.Entry{e}, projection.Hooks{
		BeforeCommit: func(_ context.Context, rs []projection.Result) error { got = rs[0]; return nil }})
	if err != nil || got.Status != wire.StatusRejected || got.Rule != string(rules.PruneFuture) || got.Code != wire.CodeInvalid {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := st.Get(context.Background(), "pruned", "p", rows.FenceKey); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rejected prune wrote the fence: %v", err)
	}
}
