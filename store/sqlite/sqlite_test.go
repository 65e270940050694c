package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"))
	}, storetest.Quirks{})
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		return open(b, filepath.Join(b.TempDir(), "store.db"))
	})
}

// A second Open of the same file, as the replay CLI does beside the
// projector, reads consistent committed state while the first writes, and
// writes of both are serialised.
func TestSecondOpenReadsWhileFirstWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	writer := open(t, path)
	reader := open(t, path)
	if err := writer.CreateTable(ctx, "shared"); err != nil {
		t.Fatal(err)
	}

	// The writer moves a fixed total between rows, 50 at a time; every
	// snapshot the reader takes must see the invariant.
	const rows, total = 50, 5000
	var ops []store.Op
	for i := range rows {
		ops = append(ops, store.Op{Kind: store.Insert, RK: fmt.Sprintf("r%02d", i), Props: events.Entity{"n": events.Int64(total / rows)}})
	}
	if err := writer.Transact(ctx, "shared", "p", ops); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes int
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			ops := make([]store.Op, rows)
			left := total
			for i := range rows {
				n := int64(0)
				if i == rows-1 {
					n = int64(left)
				} else if left > 0 {
					n = int64(r.IntN(min(left, 2*total/rows) + 1))
				}
				left -= int(n)
				ops[i] = store.Op{Kind: store.Replace, RK: fmt.Sprintf("r%02d", i), Props: events.Entity{"n": events.Int64(n)}}
			}
			if err := writer.Transact(ctx, "shared", "p", ops); err != nil {
				t.Errorf("writer: %v", err)
				return
			}
			writes++
		}
	})
	deadline := time.Now().Add(time.Second)
	reads := 0
	for time.Now().Before(deadline) {
		page, err := reader.Query(ctx, "shared", store.Query{PK: "p"})
		if err != nil {
			t.Fatalf("reader: %v", err)
		}
		sum := int64(0)
		for _, e := range page.Entities {
			sum += e.Props["n"].Int
		}
		if len(page.Entities) != rows || sum != total {
			t.Fatalf("reader saw %d rows summing to %d, want %d summing to %d", len(page.Entities), sum, rows, total)
		}
		reads++
	}
	close(stop)
	wg.Wait()
	if writes == 0 || reads == 0 {
		t.Fatalf("%d writes, %d reads: no overlap", writes, reads)
	}

	// The second store writes too, and sees the first's rows.
	if err := reader.Transact(ctx, "shared", "q", []store.Op{{Kind: store.Insert, RK: "from-reader"}}); err != nil {
		t.Fatalf("second store's write: %v", err)
	}
	if _, err := writer.Get(ctx, "shared", "q", "from-reader"); err != nil {
		t.Fatalf("first store reading the second's write: %v", err)
	}
	t.Logf("%d writes, %d consistent reads", writes, reads)
}

// Data survives Close and a new Open; the clock keeps etags unique even
// when the wall clock goes back.
func TestReopenAndClockStepBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reopen.db")
	s1, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.CreateTable(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	want := storetest.EdgeEntity()
	if err := s1.Transact(ctx, "keep", "p", []store.Op{{Kind: store.Insert, RK: "r", Props: want}}); err != nil {
		t.Fatal(err)
	}
	before, _ := s1.Get(ctx, "keep", "p", "r")
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(t, path)
	s2.now = func() time.Time { return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) } // far in the past
	got, err := s2.Get(ctx, "keep", "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if !sameProps(want, got.Props) || got.ETag != before.ETag {
		t.Fatal("row changed across reopen")
	}
	if err := s2.Transact(ctx, "keep", "p", []store.Op{{Kind: store.Merge, RK: "r", IfMatch: got.ETag}}); err != nil {
		t.Fatal(err)
	}
	after, _ := s2.Get(ctx, "keep", "p", "r")
	if after.ETag == before.ETag || !after.Timestamp.After(before.Timestamp) {
		t.Fatalf("clock went back: %s at %v after %s at %v", after.ETag, after.Timestamp, before.ETag, before.Timestamp)
	}
}

func sameProps(a, b events.Entity) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w := b[k]
		if !v.Equal(w) && !(math.IsNaN(v.Float) && math.IsNaN(w.Float)) {
			return false
		}
	}
	return true
}

func TestPropsCodecExact(t *testing.T) {
	want := storetest.EdgeEntity()
	want["nanPayload"] = events.Double(math.Float64frombits(0x7ff8dead_beef0001))
	want["dtNano"] = events.Value{Type: events.TypeDateTime, Time: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}
	got, err := decodeProps(encodeProps(want))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if !v.Equal(got[k]) { // bit-exact, NaN payloads included
			t.Errorf("%s: got %#v, want %#v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d properties, want %d", len(got), len(want))
	}
	for _, bad := range [][]byte{nil, {}, {2}, {1, 1}, {1, 1, 1, 'a', 99}, {1, 1, 1, 'a', byte(events.TypeDouble), 0}} {
		if _, err := decodeProps(bad); err == nil {
			t.Errorf("decodeProps(%v) succeeded", bad)
		}
	}
}

func TestKeyEncodingOrder(t *testing.T) {
	keys := append([]string(nil), storetest.OrderKeys...)
	for i, a := range keys {
		if decodeKey(encodeKey(a)) != a {
			t.Fatalf("key %+q does not round-trip", a)
		}
		for _, b := range keys[i+1:] {
			if got, want := strings.Compare(string(encodeKey(a)), string(encodeKey(b))), store.CompareKeys(a, b); got != want {
				t.Fatalf("encoded %+q vs %+q: %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestContinuationToken(t *testing.T) {
	for _, k := range [][2]string{{"", ""}, {"p", "r"}, {"日本", "a:b\U0001F600"}} {
		pk, rk, err := decodeToken(encodeToken(k[0], k[1]))
		if err != nil || pk != k[0] || rk != k[1] {
			t.Fatalf("token of %q: %q %q %v", k, pk, rk, err)
		}
	}
	for _, bad := range []string{"!", "AA", encodeToken("p", "r")[:2]} {
		if _, _, err := decodeToken(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("decodeToken(%q): %v", bad, err)
		}
	}
}

// The scans use the primary key index, never a sort or a full scan.
func TestScanPlans(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "plan.db"))
	for _, sh := range []scanShape{
		{partition: true, limit: true},
		{partition: true, from: true, to: true, after: true, limit: true},
		{after: true, limit: true},
		{from: true, to: true},
	} {
		rows, err := s.rdb.Query("EXPLAIN QUERY PLAN "+sh.sql(), make([]any, strings.Count(sh.sql(), "?"))...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "; ")
		if strings.Contains(joined, "TEMP B-TREE") || !strings.Contains(joined, "USING PRIMARY KEY (tid=?") {
			t.Errorf("%s:\n  plan %s", sh.sql(), joined)
		}
		if sh.after && !strings.Contains(joined, "(pk,rk)>(?,?)") && !strings.Contains(joined, "rk>?") {
			t.Logf("%s:\n  plan %s (continuation is not an index bound)", sh.sql(), joined)
		}
	}
}
