package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// deepRow writes a row with depth versions through the projector's own
// apply code, at sequences base+1 .. base+depth: an insert, replaces, and
// (from depth 3) a delete and a re-insert in the middle. It returns the
// index of the tombstone, or -1.
func deepRow(t testing.TB, st store.Store, table, pk, rk string, depth int, base uint64, gone bool) int {
	t.Helper()
	a := projection.NewApplier(st, projection.ApplierConfig{CacheRows: -1})
	del := -1
	if depth >= 3 {
		del = depth / 2
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	entries := make([]projection.Entry, 0, depth)
	for i := range depth {
		op := events.RowOp{Op: events.OpReplace, RK: rk, Entity: events.Entity{"i": events.Int32(int32(i)), "pad": events.String("some text")}}
		switch {
		case i == 0 || i == del+1:
			op.Op = events.OpInsert
		case i == del || gone && i == depth-1:
			op = events.RowOp{Op: events.OpDelete, RK: rk}
		}
		id := fmt.Sprintf("%s-%s-%d", table, rk, i)
		entries = append(entries, projection.Entry{
			Seq: base + uint64(i) + 1, At: at.Add(time.Duration(i) * time.Millisecond), ID: id,
			Cmd: &events.Command{ID: id, Table: table, PK: pk, Ops: []events.RowOp{op}},
		})
	}
	applied := 0
	err := a.Apply(context.Background(), table, pk, entries, projection.Hooks{AfterCommit: func(_ context.Context, rs []projection.Result) error {
		applied += len(rs)
		return nil
	}})
	if err != nil || applied != depth {
		t.Fatalf("build %d versions: %d applied, %v", depth, applied, err)
	}
	return del
}

// TestAsOfRowCost checks that reading one row at any point costs at most
// three store requests, at history depths 1, 100 and 1,000, at the tip and
// deep in the history, on both stores wrapped to page like Azure with a
// scan budget of 100 entities per request (a tenth of Azure's 1,000, so
// that 1,000 versions stand for Azure's 10,000 at a tenth of the writes):
// the tip's point read, one unfiltered read of one version row and one
// read of the empty range before it (which makes the answer right on a
// store that does not sort, store.Least), never a scan. (With version rows
// keyed by version, a point a quarter of the way into 10,000 versions took
// eight requests at Azure's budget: a filtered scan over the 7,500 newer
// ones; here a quarter of the way into 1,000 it would take eight too.)
func TestAsOfRowCost(t *testing.T) {
	for _, b := range stores() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			// The bound holds where the store sorts; docs/cosmos.md says
			// what the read costs where it does not.
			cs := &storetest.Paging{Store: b.ordered(t), Budget: 100}
			ctx := context.Background()
			rp, err := replay.New(ctx, replay.Config{Store: cs})
			if err != nil {
				t.Fatal(err)
			}
			table := uniqueTable("Depth")
			for di, depth := range []int{1, 100, 1_000} {
				for _, gone := range []bool{false, true} {
					if gone && depth > 100 {
						continue // a deleted row costs the same; keep the test short
					}
					base := uint64(di*100_000 + 50_000*btoi(gone))
					rk := fmt.Sprintf("row:%d:%v", depth, gone)
					del := deepRow(t, cs, table, "p", rk, depth, base, gone)
					last := depth - 1
					for _, q := range []uint64{base, base + 1, base + uint64(depth/4), base + uint64(depth/2), base + uint64(del) + 1,
						base + uint64(depth) - 1, base + uint64(depth), base + 90_000} {
						n := cs.Requests()
						row, ok, err := rp.AsOfRow(ctx, table, "p", rk, q)
						if err != nil {
							t.Fatal(err)
						}
						if cost := cs.Requests() - n; cost > 3 {
							t.Errorf("depth %d (gone %v), asof %d: %d store requests, want at most 3", depth, gone, q, cost)
						}
						i := min(int(q-base)-1, last)
						wantOK := i >= 0 && i != del && !(gone && i == last && depth > 1)
						if ok != wantOK || i >= 0 && row.Version != int64(i) {
							t.Errorf("depth %d (gone %v), asof %d: version %d exists %v, want version %d exists %v", depth, gone, q, row.Version, ok, i, wantOK)
						}
						if ok && row.Props["i"].Int != int64(i) {
							t.Errorf("depth %d, asof %d: values of version %d", depth, q, row.Props["i"].Int)
						}
					}
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
