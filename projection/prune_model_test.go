package projection_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// TestPruneEveryPoint model-checks prunes: after each prune of a random
// workload, the live table equals its rebuild from the journal so far; at
// every point from the partition's horizon on, replay reads every row as
// the unpruned journal has it; before the horizon a partition read answers
// ErrPruned, and a row read answers exactly or ErrPruned, never a wrong
// state.
func TestPruneEveryPoint(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			es := pruneWorkload(5, 60)
			quiet := projection.ApplierConfig{Logger: projectiontest.QuietLogger()}
			live, full := b.Open(t), b.Open(t)
			la, fa := projection.NewApplier(live, quiet), projection.NewApplier(full, quiet)
			rp, err := replay.New(ctx, replay.Config{Store: live, Logger: projectiontest.QuietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			var horizon uint64
			prunes := 0
			for i, e := range es {
				if err := la.Apply(ctx, "pruned", "p", es[i:i+1], projection.Hooks{}); err != nil {
					t.Fatal(err)
				}
				if !e.Cmd.IsPrune() {
					if err := fa.Apply(ctx, "pruned", "p", es[i:i+1], projection.Hooks{}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				prunes++
				horizon = max(horizon, e.Cmd.Prune.Horizon)
				// The rebuild of the journal so far, in one go.
				rebuilt := b.Open(t)
				if err := projection.NewApplier(rebuilt, quiet).Apply(ctx, "pruned", "p", es[:i+1], projection.Hooks{}); err != nil {
					t.Fatal(err)
				}
				projectiontest.CompareStores(t, live, rebuilt, "pruned")
				for s := uint64(1); s <= e.Seq; s++ {
					checkPoint(t, rp, full, s, horizon)
				}
			}
			if prunes < 3 {
				t.Fatalf("the workload holds %d prunes", prunes)
			}
		})
	}
}

// checkPoint checks replay's answers at seq against the unpruned store.
func checkPoint(t *testing.T, rp *replay.Source, full store.Store, seq, horizon uint64) {
	t.Helper()
	ctx := context.Background()
	err := history.New(rp).AsOf(ctx, "pruned", store.InPartition("p"), seq, func(rows.Row) error { return nil })
	if seq < horizon && !errors.Is(err, replay.ErrPruned) || seq >= horizon && err != nil {
		t.Fatalf("asof of the partition at %d (horizon %d): %v", seq, horizon, err)
	}
	for k := range 4 {
		rk := fmt.Sprintf("r%d", k)
		got, ok, err := history.New(rp).AsOfRow(ctx, "pruned", "p", rk, seq)
		if errors.Is(err, replay.ErrPruned) && seq < horizon {
			continue
		}
		if err != nil {
			t.Fatalf("asof %s at %d (horizon %d): %v", rk, seq, horizon, err)
		}
		want, wok := stateAt(t, full, rk, seq)
		wok = wok && !want.Deleted
		if ok != wok || ok && (got.Version != want.Version || !got.Props.Equal(want.Props)) {
			t.Fatalf("asof %s at %d (horizon %d): %v %+v, want %v %+v", rk, seq, horizon, ok, got, wok, want)
		}
	}
}
