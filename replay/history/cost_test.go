package history_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/store/storetest"
)

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
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			// The bound holds where the store sorts; docs/cosmos.md says
			// what the read costs where it does not.
			cs := &storetest.Paging{Store: b.Ordered(t), Budget: 100}
			ctx := context.Background()
			rp, err := replay.New(ctx, replay.Config{Store: cs})
			if err != nil {
				t.Fatal(err)
			}
			table := replaytest.UniqueTable("Depth")
			for di, depth := range []int{1, 100, 1_000} {
				for _, gone := range []bool{false, true} {
					if gone && depth > 100 {
						continue // a deleted row costs the same; keep the test short
					}
					base := uint64(di*100_000 + 50_000*btoi(gone))
					rk := fmt.Sprintf("row:%d:%v", depth, gone)
					del := replaytest.DeepRow(t, cs, table, "p", rk, depth, base, gone)
					// The table's layout is resolved once per Source and
					// table (replay.Source.Layout, two requests), not per
					// read: resolved here, the reads below pay none.
					if _, err := rp.Layout(ctx, table); err != nil {
						t.Fatal(err)
					}
					last := depth - 1
					for _, q := range []uint64{base, base + 1, base + uint64(depth/4), base + uint64(depth/2), base + uint64(del) + 1,
						base + uint64(depth) - 1, base + uint64(depth), base + 90_000} {
						n := cs.Requests()
						row, ok, err := history.New(rp).AsOfRow(ctx, table, "p", rk, q)
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
