package simazure

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// fakeClock is a clock whose Sleep returns at once, moving time on.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// openSQLite opens the inner store in a fresh file, with tables created.
func openSQLite(t *testing.T, tables ...string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, name := range tables {
		if err := s.CreateTable(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func newStore(t *testing.T, inner store.Store, cfg Config) *Store {
	t.Helper()
	s, err := New(inner, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The wrapper with its limits far above what the suite asks is the
// embedded store, with latency.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return newStore(t, openSQLite(t), Config{Latency: time.Millisecond, PartitionRate: 1e9, AccountRate: 1e9})
	}, storetest.Quirks{})
}

// rows returns n upserts of distinct rows.
func rows(n int) []store.Op {
	ops := make([]store.Op, n)
	for i := range ops {
		ops[i] = store.Op{Kind: store.Upsert, RK: fmt.Sprintf("r%03d", i), Props: edm.Entity{"n": edm.Int64(int64(i))}}
	}
	return ops
}

// A step of TestLimits: move the clock on, then send one request.
type step struct {
	advance time.Duration
	pk      string
	tx      int // a transaction of tx upserts, else
	query   int // a query of the partition returning query rows (seeded beforehand)
	get     bool
	busy    bool // want ErrBusy
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name           string
		partition, acc float64
		steps          []step
		wantBusy       int64
		wantEntities   int64
	}{
		{
			name: "partition", partition: 200, acc: -1,
			steps: []step{
				{pk: "p1", tx: 1, busy: true}, // buckets start empty
				{advance: 500 * time.Millisecond, pk: "p1", tx: 100},
				{pk: "p1", tx: 1, busy: true},
				{pk: "p2", tx: 100}, // another partition has its own
				{advance: 250 * time.Millisecond, pk: "p1", tx: 51, busy: true},
				{pk: "p1", tx: 50},
				{pk: "p1", get: true, busy: true},
				{advance: 10 * time.Second, pk: "p1", tx: 100}, // capacity: one second's worth
				{pk: "p1", tx: 100},
				{pk: "p1", get: true, busy: true},
			},
			wantBusy: 5, wantEntities: 450,
		},
		{
			name: "account", partition: -1, acc: 300,
			steps: []step{
				{advance: time.Hour, pk: "p1", tx: 100},
				{pk: "p2", tx: 100},
				{pk: "p3", tx: 100},
				{pk: "p4", tx: 1, busy: true},
				{pk: "p1", get: true, busy: true},
				{advance: 10 * time.Millisecond, pk: "p4", tx: 3},
			},
			wantBusy: 2, wantEntities: 303,
		},
		{
			name: "both", partition: 200, acc: 300,
			steps: []step{
				{advance: time.Second, pk: "p1", tx: 100},
				{pk: "p1", tx: 100},
				{pk: "p1", tx: 1, busy: true}, // the partition's limit
				{pk: "p2", tx: 100},
				{pk: "p3", tx: 1, busy: true}, // the account's
			},
			wantBusy: 2, wantEntities: 300,
		},
		{
			// A query pays for every entity it returns, after the fact.
			name: "reads", partition: 200, acc: -1,
			steps: []step{
				{advance: time.Second, pk: "q1", query: 150},
				{pk: "q1", tx: 51, busy: true},
				{pk: "q1", tx: 50},
				{advance: time.Second, pk: "q2", query: 250}, // admitted on 200, leaves a debt of 50
				{advance: 250 * time.Millisecond, pk: "q2", get: true, busy: true},
				{advance: 5 * time.Millisecond, pk: "q2", get: true},
			},
			wantBusy: 2, wantEntities: 451,
		},
		{
			name: "unlimited", partition: -1, acc: -1,
			steps:        []step{{pk: "p1", tx: 100}, {pk: "p1", tx: 100}, {pk: "p1", query: 250}, {pk: "p1", get: true}},
			wantEntities: 451,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			const table = "limits"
			inner := openSQLite(t, table)
			// Rows for the queries, written around the simulation.
			for _, st := range tt.steps {
				for lo := 0; lo < st.query; lo += store.MaxOps {
					ops := rows(st.query)[lo:min(st.query, lo+store.MaxOps)]
					if _, err := inner.Transact(ctx, table, st.pk, ops); err != nil {
						t.Fatal(err)
					}
				}
			}
			clock := newFakeClock()
			s := newStore(t, inner, Config{Latency: -1, PartitionRate: tt.partition, AccountRate: tt.acc, Clock: clock})
			for i, st := range tt.steps {
				clock.advance(st.advance)
				var err error
				what := fmt.Sprintf("step %d (%+v)", i, st)
				switch {
				case st.tx > 0:
					ops := rows(st.tx)
					for j := range ops {
						ops[j].RK = fmt.Sprintf("tx%d-%03d", i, j)
					}
					_, err = s.Transact(ctx, table, st.pk, ops)
					_, gerr := inner.Get(ctx, table, st.pk, ops[0].RK)
					if st.busy && !errors.Is(gerr, store.ErrNotFound) {
						t.Errorf("%s: a throttled transaction wrote: Get = %v", what, gerr)
					}
				case st.query > 0:
					var p store.Page
					p, err = s.Query(ctx, table, store.Query{PK: st.pk, To: "s"})
					if err == nil && len(p.Entities) != st.query {
						t.Fatalf("%s: %d entities, want %d", what, len(p.Entities), st.query)
					}
				case st.get:
					_, err = s.Get(ctx, table, st.pk, "none")
					if errors.Is(err, store.ErrNotFound) {
						err = nil // admitted
					}
				}
				if st.busy != errors.Is(err, store.ErrBusy) || (!st.busy && err != nil) {
					t.Errorf("%s: err = %v, want busy %v", what, err, st.busy)
				}
			}
			got := s.Stats()
			if got.Busy != tt.wantBusy || got.Entities != tt.wantEntities || got.Requests != int64(len(tt.steps)) {
				t.Errorf("stats %+v, want %d requests, %d busy, %d entities", got, len(tt.steps), tt.wantBusy, tt.wantEntities)
			}
		})
	}
}

func TestLatency(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func(s *Store) error
	}{
		{"create table", func(s *Store) error { return s.CreateTable(ctx, "lat2") }},
		{"list tables", func(s *Store) error { _, err := s.ListTables(ctx); return err }},
		{"get", func(s *Store) error {
			_, err := s.Get(ctx, "lat", "p", "r")
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}},
		{"query", func(s *Store) error { _, err := s.Query(ctx, "lat", store.Query{PK: "p"}); return err }},
		{"transact", func(s *Store) error { _, err := s.Transact(ctx, "lat", "p", rows(3)); return err }},
		{"delete table", func(s *Store) error { return s.DeleteTable(ctx, "lat") }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			inner := openSQLite(t, "lat")
			clock := newFakeClock()
			s := newStore(t, inner, Config{Latency: 7 * time.Millisecond, PartitionRate: -1, AccountRate: -1, Clock: clock})
			if err := c.call(s); err != nil {
				t.Fatal(err)
			}
			if got := clock.sleeps(); len(got) != 1 || got[0] != 7*time.Millisecond {
				t.Errorf("slept %v, want [7ms]", got)
			}
		})
	}
	t.Run("default on the wall clock", func(t *testing.T) {
		s := newStore(t, openSQLite(t), Config{})
		start := time.Now()
		if _, err := s.ListTables(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < DefaultLatency {
			t.Errorf("a request took %s, want at least %s", d, DefaultLatency)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		inner := openSQLite(t)
		s := newStore(t, inner, Config{Latency: time.Hour})
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.CreateTable(ctx, "never"); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if names, err := inner.ListTables(context.Background()); err != nil || len(names) != 0 {
			t.Errorf("tables %v (%v), want none: the request must not reach the store", names, err)
		}
	})
}

// The client retry policy: waits growing as azcore's, until admitted or
// out of retries.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		retries  int
		ops      int
		wantBusy bool
		// the bounds of each wait: Delay·(2ⁿ−1)·[0.8, 1.3)
		waits [][2]time.Duration
	}{
		// 200/s: the first retry (80..130 ms) earns 16..26 entities, the
		// second (240..390 ms more) at least 64.
		{name: "admitted on the second retry", retries: 2, ops: 50,
			waits: [][2]time.Duration{{80 * time.Millisecond, 130 * time.Millisecond}, {240 * time.Millisecond, 390 * time.Millisecond}}},
		{name: "out of retries", retries: 1, ops: 100, wantBusy: true,
			waits: [][2]time.Duration{{80 * time.Millisecond, 130 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := openSQLite(t, "retry")
			clock := newFakeClock()
			s := newStore(t, inner, Config{Latency: -1, PartitionRate: 200, AccountRate: -1, Clock: clock,
				Retry: Retry{MaxRetries: tt.retries, Delay: 100 * time.Millisecond, MaxDelay: time.Second}})
			_, err := s.Transact(ctx, "retry", "p", rows(tt.ops))
			if tt.wantBusy != errors.Is(err, store.ErrBusy) || (!tt.wantBusy && err != nil) {
				t.Fatalf("err = %v, want busy %v", err, tt.wantBusy)
			}
			got := clock.sleeps()
			if len(got) != len(tt.waits) {
				t.Fatalf("waits %v, want %d", got, len(tt.waits))
			}
			for i, w := range tt.waits {
				if got[i] < w[0] || got[i] >= w[1] {
					t.Errorf("wait %d: %s, want in [%s, %s)", i+1, got[i], w[0], w[1])
				}
			}
			st := s.Stats()
			wantBusy := int64(len(tt.waits))
			if tt.wantBusy {
				wantBusy++
			}
			if st.Busy != wantBusy || st.Requests != int64(len(tt.waits))+1 {
				t.Errorf("stats %+v, want %d busy of %d requests", st, wantBusy, len(tt.waits)+1)
			}
		})
	}
	t.Run("capped", func(t *testing.T) {
		s := newStore(t, openSQLite(t), Config{Retry: Retry{MaxRetries: 10, Delay: time.Second, MaxDelay: 3 * time.Second}})
		if d := s.retryDelay(5); d != 3*time.Second {
			t.Errorf("retry 5 waits %s, want the 3s cap", d)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, cfg := range []Config{
		{PartitionRate: nan()},
		{AccountRate: inf()},
		{Burst: -time.Second},
		{Retry: Retry{MaxRetries: -1}},
	} {
		if _, err := New(nil, cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := New(nil, Config{Latency: -1, PartitionRate: -1, AccountRate: -1}); err != nil {
		t.Errorf("negative latency and rates (none): %v", err)
	}
}

func nan() float64 { z := 0.0; return z / z }
func inf() float64 { z := 0.0; return 1 / z }

// Idle partitions are dropped once there are many, and come back full.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	inner := openSQLite(t, "sweep")
	clock := newFakeClock()
	s := newStore(t, inner, Config{Latency: -1, PartitionRate: 200, AccountRate: -1, Clock: clock})
	s.sweepAt = 3
	clock.advance(time.Second)
	for _, pk := range []string{"a", "b", "c"} {
		if _, err := s.Transact(ctx, "sweep", pk, rows(100)); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(time.Second) // a, b and c are full again
	if _, err := s.Transact(ctx, "sweep", "d", rows(100)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.parts); n != 1 {
		t.Errorf("%d partition buckets after the sweep, want 1 (d)", n)
	}
	// a comes back with a full bucket: two full transactions, then no more.
	for i, want := range []bool{false, false, true} {
		if _, err := s.Transact(ctx, "sweep", "a", rows(100)); errors.Is(err, store.ErrBusy) != want {
			t.Errorf("transaction %d on a swept partition: err = %v, want busy %v", i, err, want)
		}
	}
}
