package history_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// TestShuffledAnswers: asof (one row and a whole table), history and
// snapshot answer the same whether the store answers its pages in key
// order or shuffled, as Cosmos DB for Table does, at history depths 1, 10
// and 250, on both stores. The point read of one row and history answer
// the same even when a page holds any rows of the range (Shuffle with
// Scatter), which is all Cosmos promises.
func TestShuffledAnswers(t *testing.T) {
	ctx := context.Background()
	for _, b := range projectiontest.Backends(replaytest.Azurite.ConnectionString()) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ordered := b.Ordered(t)
			table := replaytest.UniqueTable("Shuffled")
			depths := []int{1, 10, 250}
			var points []uint64
			for di, depth := range depths {
				base := uint64(di * 1000)
				replaytest.DeepRow(t, ordered, table, "p", fmt.Sprintf("row%d", depth), depth, base, false)
				replaytest.DeepRow(t, ordered, table, "q", fmt.Sprintf("gone%d", depth), depth, base+500, depth > 1)
				points = append(points, base, base+1, base+uint64(depth/2), base+uint64(depth), base+500+uint64(depth/2)+1, base+500+uint64(depth))
			}
			points = append(points, 1<<40)
			views := []struct {
				name    string
				st      store.Store
				scatter bool
			}{
				{"shuffled", &storetest.Shuffle{Store: ordered, Seed: 7}, false},
				{"shuffled again", &storetest.Shuffle{Store: ordered, Seed: 8}, false},
				{"scattered", &storetest.Shuffle{Store: ordered, Seed: 9, Scatter: true}, true},
			}
			want := answers(t, ctx, ordered, table, depths, points, false)
			for _, v := range views {
				got := answers(t, ctx, v.st, table, depths, points, v.scatter)
				for k, w := range want {
					if g, ok := got[k]; ok && g != w {
						t.Errorf("%s: %s:\n got %s\nwant %s", v.name, k, g, w)
					}
				}
				if sh := v.st.(*storetest.Shuffle).ShuffledPages(); sh == 0 {
					t.Errorf("%s: no page was shuffled", v.name)
				}
			}
		})
	}
}

// answers reads every answer the test compares, rendered as text by what
// was asked. Through a scattering store it reads the point reads and
// history only: scans stream across pages, which must follow each other
// in key order.
func answers(t *testing.T, ctx context.Context, st store.Store, table string, depths []int, points []uint64, scatter bool) map[string]string {
	t.Helper()
	rp, err := replay.New(ctx, replay.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	row := func(r rows.Row, ok bool) string {
		return fmt.Sprintf("%v v%d seq %d deleted %v tip %v %v", ok, r.Version, r.Seq, r.Deleted, r.Tip, r.Props)
	}
	for di, depth := range depths {
		// Each row at its own depth's six points, before everything and
		// after everything: the other depths' points fall before the row
		// or after its last version, as the first and the last do.
		own := append([]uint64{points[0], points[len(points)-1]}, points[di*6:di*6+6]...)
		for _, id := range [][2]string{{"p", fmt.Sprintf("row%d", depth)}, {"q", fmt.Sprintf("gone%d", depth)}} {
			for _, at := range own {
				r, ok, err := history.New(rp).AsOfRow(ctx, table, id[0], id[1], at)
				if err != nil {
					t.Fatal(err)
				}
				out[fmt.Sprintf("asof %s/%s at %d", id[0], id[1], at)] = row(r, ok)
			}
			h, err := history.New(rp).History(ctx, table, id[0], id[1])
			if err != nil {
				t.Fatal(err)
			}
			var hs []string
			for _, r := range h {
				hs = append(hs, row(r, true))
			}
			if len(h) != depth {
				t.Errorf("history of %s/%s: %d versions, want %d", id[0], id[1], len(h), depth)
			}
			out[fmt.Sprintf("history %s/%s", id[0], id[1])] = fmt.Sprint(hs)
		}
	}
	if scatter {
		return out
	}
	for i, at := range points {
		var got []string
		err := history.New(rp).AsOf(ctx, table, store.AllPartitions, at, func(r rows.Row) error {
			got = append(got, fmt.Sprintf("%s/%s ", r.PK, r.RK)+row(r, true))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("asof table at %d", at)] = fmt.Sprint(got)
		if at == points[0] {
			continue // before anything: a snapshot of nothing
		}
		if i%3 != 2 && i != len(points)-1 {
			// Snapshots (and their loads) at a third of the points: half
			// way through each depth's live row, at the end of each
			// depth's deleted row, and after everything. The points in
			// between are read by the asof of the table above, through
			// the same scans.
			continue
		}
		for _, workers := range []int{1, 4} {
			var buf bytes.Buffer
			if _, err := snapshot.New(rp).Take(ctx, &buf, snapshot.Config{Table: table, Seq: at, Workers: workers}); err != nil {
				t.Fatal(err)
			}
			into := replaytest.UniqueTable("Loaded")
			if _, err := snapshot.New(rp).Load(ctx, bytes.NewReader(buf.Bytes()), snapshot.LoadConfig{Into: into, SkipErasureCheck: true}); err != nil {
				t.Fatal(err)
			}
			loaded := replaytest.AllRows(t, ctx, st, into)
			keys := make([]string, 0, len(loaded))
			for k, e := range loaded {
				keys = append(keys, fmt.Sprintf("%v=%v", k, e))
			}
			slices.Sort(keys)
			out[fmt.Sprintf("snapshot at %d, %d workers", at, workers)] = fmt.Sprint(keys)
		}
	}
	return out
}
