package rows_test

import (
	"context"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// TestReadState reads one row's state on stores that answer pages in key
// order, shuffled, scattered over the range (Cosmos DB for Table) and
// first empty (Azure), for rows that exist, were deleted (with one version
// or a deep history), were deleted and inserted again, and never existed;
// and checks that a row that exists or never existed costs one round trip:
// its tip and its history are read at once.
func TestReadState(t *testing.T) {
	ctx := context.Background()
	var j journal
	add := j.add
	add(upsert("live", "n", 1))
	add(upsert("gone", "n", 1))
	gone := add(op(events.OpDelete, "gone", "", 0))
	for i := range 40 {
		add(upsert("deep", "n", i))
	}
	deep := add(op(events.OpDelete, "deep", "", 0))
	add(upsert("back", "n", 1))
	add(op(events.OpDelete, "back", "", 0))
	back := add(op(events.OpInsert, "back", "n", 2))
	live := add(upsert("live", "n", 2), upsert("live:x", "n", 2)) // a key that extends another
	st := j.applied(t)

	want := []struct {
		rk        string
		tip       bool
		latestSeq uint64 // 0: the row never existed
	}{
		{"live", true, live},
		{"gone", false, gone},
		{"deep", false, deep},
		{"back", true, back},
		{"never", false, 0},
	}
	stores := []struct {
		name string
		st   store.Store
	}{
		{"in key order", st},
		{"shuffled", &storetest.Shuffle{Store: st, Seed: 3}},
		{"scattered", &storetest.Shuffle{Store: st, Seed: 4, Scatter: true}},
		{"first pages empty", &storetest.Paging{Store: st, EmptyFirst: true}},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			for _, w := range want {
				got, err := rows.ReadState(ctx, s.st, "orders", "p", w.rk)
				if err != nil {
					t.Fatal(err)
				}
				if (got.Tip != nil) != w.tip {
					t.Errorf("%q: tip %v, want %v", w.rk, got.Tip != nil, w.tip)
				}
				var seq uint64
				if got.Latest != nil {
					seq = got.Latest.Seq
				}
				if seq != w.latestSeq {
					t.Errorf("%q: newest version at seq %d, want %d", w.rk, seq, w.latestSeq)
				}
				if got.Tip != nil && got.Latest != got.Tip {
					t.Errorf("%q: a row with a tip has another newest version", w.rk)
				}
			}
		})
	}

	t.Run("one round trip", func(t *testing.T) {
		for _, tt := range []struct {
			rk    string
			trips int
		}{{"live", 1}, {"never", 1}, {"gone", 2}} {
			rv := &storetest.Rendezvous{Store: st, N: 2}
			if _, err := rows.ReadState(ctx, rv, "orders", "p", tt.rk); err != nil {
				t.Fatal(err)
			}
			if got := rv.RoundTrips(); got != tt.trips {
				t.Errorf("%q: %d round trips, want %d", tt.rk, got, tt.trips)
			}
		}
	})
}
