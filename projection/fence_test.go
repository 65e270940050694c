package projection_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
	"github.com/tablejournal/tablejournal/wire"
)

// beforeTxStore runs a function once, just before the first transaction
// through it: another instance acting between this one's reads and its
// write.
type beforeTxStore struct {
	store.Store
	once sync.Once
	fn   func()
}

func (b *beforeTxStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	b.once.Do(b.fn)
	return b.Store.Transact(ctx, table, pk, ops)
}

func cmdEntry(seq uint64, id string, ops ...events.RowOp) projection.Entry {
	return projection.Entry{Seq: seq, ID: id, At: time.Date(2026, 11, 21, 10, 0, int(seq), 0, time.UTC),
		Cmd: &events.Command{ID: id, Table: "orders", PK: "p", Ops: ops}}
}

func rowOp(kind events.OpKind, rk string, n int) events.RowOp {
	o := events.RowOp{Op: kind, RK: rk}
	if kind != events.OpDelete {
		o.Entity = edm.Entity{"n": edm.Int32(int32(n))}
	}
	return o
}

func statuses(rs *[]projection.Result, mu *sync.Mutex) projection.Hooks {
	rec := func(_ context.Context, got []projection.Result) error {
		mu.Lock()
		*rs = append(*rs, got...)
		mu.Unlock()
		return nil
	}
	return projection.Hooks{BeforeCommit: rec, AfterCommit: rec}
}

func statusOf(rs []projection.Result, seq uint64) wire.Status {
	for _, r := range rs {
		if r.Seq == seq {
			return r.Status
		}
	}
	return ""
}

// checkFenced checks instance A's results against want and the table
// against the model of es, which it returns.
func checkFenced(t *testing.T, st store.Store, layout wire.Layout, rs []projection.Result, es []projection.Entry, want map[uint64]wire.Status) *projectiontest.Model {
	t.Helper()
	for seq, w := range want {
		if got := statusOf(rs, seq); got != w {
			t.Errorf("A: seq %d %s, want %s", seq, got, w)
		}
	}
	m := projectiontest.NewModel()
	for _, e := range es {
		m.Apply(e.Seq, e.Cmd)
	}
	compareLayout(t, st, layout, m)
	return m
}

// compareLayout checks the orders table of st, laid out as layout, against
// the model: its versioned rows (a plain table's history), and a plain
// table itself against the history's tips.
func compareLayout(t *testing.T, st store.Store, layout wire.Layout, m *projectiontest.Model) {
	t.Helper()
	projectiontest.CompareTableIn(t, st, projectiontest.VersionTable(t, "orders", layout), "orders", m)
	if layout == wire.LayoutPlain {
		projectiontest.CheckPlain(t, st, "orders")
	}
}

// forLayouts runs test on each backend and each layout (SPEC §4): the
// subtest of a plain layout is named after the backend and "-plain", its
// Appliers' config saying every table is plain.
func forLayouts(t *testing.T, test func(t *testing.T, b projectiontest.Backend, layout wire.Layout, cfg projection.ApplierConfig)) {
	for _, b := range backends() {
		for _, layout := range projectiontest.Layouts {
			name, cfg := b.Name, projection.ApplierConfig{Logger: projectiontest.QuietLogger()}
			if layout == wire.LayoutPlain {
				name, cfg.Layouts = name+"-plain", plainOnly
			}
			t.Run(name, func(t *testing.T) { test(t, b, layout, cfg) })
		}
	}
}

// TestFenceLateFirstInsert: instance A reads that a row does not exist and
// is about to insert it (version 0, which writes no version row), when
// instance B applies that insert and a delete of the row. A's late insert
// must not re-create a tip beside the tombstone (the row would be wedged:
// every later insert failing with EntityAlreadyExists); it fails on the
// fence, reloads and finds its command handled. A later re-insert through A
// applies.
func TestFenceLateFirstInsert(t *testing.T) {
	forLayouts(t, func(t *testing.T, b projectiontest.Backend, layout wire.Layout, cfg projection.ApplierConfig) {
		ctx := context.Background()
		st := b.Open(t)
		insert := cmdEntry(1, "c1", rowOp(events.OpInsert, "x", 1))
		del := cmdEntry(2, "c2", rowOp(events.OpDelete, "x", 0))
		reinsert := cmdEntry(3, "c3", rowOp(events.OpInsert, "x", 3))
		appB := projection.NewApplier(st, cfg)
		late := &beforeTxStore{Store: st, fn: func() {
			if err := appB.Apply(ctx, "orders", "p", []projection.Entry{insert, del}, projection.Hooks{}); err != nil {
				t.Errorf("instance B: %v", err)
			}
		}}
		appA := projection.NewApplier(late, cfg)
		var rs []projection.Result
		var mu sync.Mutex
		if err := appA.Apply(ctx, "orders", "p", []projection.Entry{insert}, statuses(&rs, &mu)); err != nil {
			t.Fatalf("instance A: %v", err)
		}
		if got := statusOf(rs, 1); got != projection.Skipped {
			t.Errorf("A's late insert: %s, want skipped (B applied it)", got)
		}
		if err := appA.Apply(ctx, "orders", "p", []projection.Entry{del, reinsert}, statuses(&rs, &mu)); err != nil {
			t.Fatalf("instance A, re-insert: %v", err)
		}
		if got := statusOf(rs, 3); got != wire.StatusApplied {
			t.Errorf("re-insert after the tombstone: %s, want applied", got)
		}
		m := projectiontest.NewModel()
		for _, e := range []projection.Entry{insert, del, reinsert} {
			m.Apply(e.Seq, e.Cmd)
		}
		compareLayout(t, st, layout, m)
		if n := appA.Stats().FenceConflicts.Load(); n == 0 {
			t.Error("A's stale insert met no fence")
		}
	})
}

// TestFenceStaleCache: instance A caches a row it wrote; instance B then
// moves the row on (update, delete, re-insert). A, handed the same commands
// and more, must not trust its cache: the table wins, B's commands are
// skipped, and A's own ifVersion guard is checked against the table's
// version, not the cached one.
func TestFenceStaleCache(t *testing.T) {
	forLayouts(t, func(t *testing.T, b projectiontest.Backend, layout wire.Layout, cfg projection.ApplierConfig) {
		ctx := context.Background()
		st := b.Open(t)
		appA := projection.NewApplier(st, cfg)
		appB := projection.NewApplier(st, cfg)
		v := func(n int64) *int64 { return &n }
		es := []projection.Entry{
			cmdEntry(1, "c1", rowOp(events.OpInsert, "x", 1)),
			cmdEntry(2, "c2", rowOp(events.OpMerge, "x", 2)),
			cmdEntry(3, "c3", rowOp(events.OpDelete, "x", 0)),
			cmdEntry(4, "c4", rowOp(events.OpInsert, "x", 4)),
		}
		guarded := rowOp(events.OpReplace, "x", 5)
		guarded.IfVersion = v(3) // x is at version 3 after c4
		es = append(es, cmdEntry(5, "c5", guarded))
		stale := rowOp(events.OpReplace, "x", 6)
		stale.IfVersion = v(0) // what A's cache would say
		es = append(es, cmdEntry(6, "c6", stale))

		var rs []projection.Result
		var mu sync.Mutex
		if err := appA.Apply(ctx, "orders", "p", es[:1], projection.Hooks{}); err != nil {
			t.Fatal(err)
		}
		if err := appB.Apply(ctx, "orders", "p", es[:4], projection.Hooks{}); err != nil {
			t.Fatal(err)
		}
		if err := appA.Apply(ctx, "orders", "p", es[1:], statuses(&rs, &mu)); err != nil {
			t.Fatal(err)
		}
		m := checkFenced(t, st, layout, rs, es, map[uint64]wire.Status{2: projection.Skipped, 3: projection.Skipped,
			4: projection.Skipped, 5: wire.StatusApplied, 6: wire.StatusRejected})
		if got := fmt.Sprint(m.Status[6]); got != "rejected" {
			t.Fatalf("model: seq 6 %s", got)
		}
	})
}

// TestFenceSkippedPastCachedView: instance A caches a partition's view (no
// fence yet, row r0 absent) after a rejection. Instance B then applies the
// commands after it: c2 inserts r0 and r1, c3 rewrites r1. A's next batch
// reads r1 from the table, finds it written after its cached fence and
// skips c2 and c3 — so A has moved past commands whose effects its cached
// view lacks. Its batch after that names only r0, which the cache still
// holds as absent: deciding c4 (merge r0) on it would reject c4, and a
// rejection is published before anything is written. A row read newer than
// the view's fence shows the view is behind the table: the fence is read
// again and the rows with it, so c4 applies.
func TestFenceSkippedPastCachedView(t *testing.T) {
	forLayouts(t, func(t *testing.T, b projectiontest.Backend, layout wire.Layout, cfg projection.ApplierConfig) {
		ctx := context.Background()
		st := b.Open(t)
		appA := projection.NewApplier(st, cfg)
		appB := projection.NewApplier(st, cfg)
		es := []projection.Entry{
			cmdEntry(1, "c1", rowOp(events.OpReplace, "r0", 1)),
			cmdEntry(2, "c2", rowOp(events.OpInsert, "r0", 2), rowOp(events.OpInsert, "r1", 2)),
			cmdEntry(3, "c3", rowOp(events.OpUpsert, "r1", 3)),
			cmdEntry(4, "c4", rowOp(events.OpMerge, "r0", 4)),
		}
		var rs []projection.Result
		var mu sync.Mutex
		hooks := statuses(&rs, &mu)
		for _, step := range []struct {
			app     *projection.Applier
			entries []projection.Entry
		}{
			{appA, es[:1]}, {appB, es[:3]}, {appA, es[1:3]}, {appA, es[3:]},
		} {
			h := projection.Hooks{}
			if step.app == appA {
				h = hooks
			}
			if err := step.app.Apply(ctx, "orders", "p", step.entries, h); err != nil {
				t.Fatal(err)
			}
		}
		checkFenced(t, st, layout, rs, es, map[uint64]wire.Status{1: wire.StatusRejected, 2: projection.Skipped,
			3: projection.Skipped, 4: wire.StatusApplied})
	})
}

// fenceAfterRows holds the first read of a partition's fence until rows
// reads of rows returned, then runs fn (another instance committing) before
// the fence is read: the fence is read after the rows read with it.
type fenceAfterRows struct {
	store.Store
	rows int
	fn   func()

	mu       sync.Mutex
	returned int
	enough   chan struct{}
	once     sync.Once
}

// errFenceFirst fails the applier when the fence was read alone, the rows
// after it, which the test's Apply then reports.
var errFenceFirst = errors.New("the fence was read first, not with the rows")

func newFenceAfterRows(st store.Store, rows int, fn func()) *fenceAfterRows {
	return &fenceAfterRows{Store: st, rows: rows, fn: fn, enough: make(chan struct{})}
}

func (f *fenceAfterRows) rowRead() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.returned++; f.returned == f.rows {
		close(f.enough)
	}
}

func (f *fenceAfterRows) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	if rk != rows.FenceKey {
		defer f.rowRead()
		return f.Store.Get(ctx, table, pk, rk)
	}
	var err error
	f.once.Do(func() {
		select {
		case <-f.enough:
			f.fn()
		case <-time.After(10 * time.Second):
			err = errFenceFirst
		}
	})
	if err != nil {
		return store.Entity{}, err
	}
	return f.Store.Get(ctx, table, pk, rk)
}

func (f *fenceAfterRows) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	defer f.rowRead()
	return f.Store.Query(ctx, table, q)
}

// TestFenceReadWithRows: a partition neither cached nor in a view has its
// fence and its rows read at once (and a plain table's rows with them). A
// partition the projector never wrote costs one round trip of reads; one it wrote reads its rows again under
// the fence, since they may predate it: here instance B inserts and
// updates a row after A read it and before A read the fence, and A, which
// found no row, must not reject its guarded replace of the row on that (a
// rejection writes nothing, so no condition of a transaction would catch
// it): the replace applies on the version B wrote.
func TestFenceReadWithRows(t *testing.T) {
	forLayouts(t, func(t *testing.T, b projectiontest.Backend, layout wire.Layout, cfg projection.ApplierConfig) {
		ctx := context.Background()
		t.Run("never written", func(t *testing.T) {
			reads := 3 // the fence, a tip, a history
			if layout == wire.LayoutPlain {
				reads++ // and the plain table's row, for the mirror after the commit
			}
			rv := &storetest.Rendezvous{Store: b.Open(t), N: reads}
			es := []projection.Entry{cmdEntry(1, "c1", rowOp(events.OpUpsert, "x", 1))}
			if err := projection.NewApplier(rv, cfg).Apply(ctx, "orders", "new", es, projection.Hooks{}); err != nil {
				t.Fatal(err)
			}
			if got := rv.RoundTrips(); got != 1 {
				t.Errorf("a write to a new partition read in %d round trips, want 1", got)
			}
		})
		t.Run("written meanwhile", func(t *testing.T) {
			v := func(n int64) *int64 { return &n }
			guarded := rowOp(events.OpReplace, "x", 3)
			guarded.IfVersion = v(1) // x is at version 1 after c2
			es := []projection.Entry{
				cmdEntry(1, "c1", rowOp(events.OpInsert, "x", 1)),
				cmdEntry(2, "c2", rowOp(events.OpMerge, "x", 2)),
				cmdEntry(3, "c3", guarded),
			}
			st := b.Open(t)
			appB := projection.NewApplier(st, cfg)
			late := newFenceAfterRows(st, 2, func() { // x's tip and history
				if err := appB.Apply(ctx, "orders", "p", es[:2], projection.Hooks{}); err != nil {
					t.Errorf("instance B: %v", err)
				}
			})
			var rs []projection.Result
			var mu sync.Mutex
			if err := projection.NewApplier(late, cfg).Apply(ctx, "orders", "p", es[2:], statuses(&rs, &mu)); err != nil {
				t.Fatal(err)
			}
			checkFenced(t, st, layout, rs, es, map[uint64]wire.Status{3: wire.StatusApplied})
		})
	})
}
