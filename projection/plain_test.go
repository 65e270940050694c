package projection_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// plainOnly is the ApplierConfig.Layouts of a test whose every table is
// plain.
func plainOnly(context.Context, string) (wire.Layout, error) { return wire.LayoutPlain, nil }

// crashStore wraps a real store and fails every transaction on one table
// after the first `after` ones there: a projector that dies between the
// history's commit and the plain table's write (SPEC §4, "The plain
// layout"), as often as the test likes.
type crashStore struct {
	store.Store
	table string

	mu            sync.Mutex
	after, writes int
	failed        int
}

func (c *crashStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	if strings.EqualFold(table, c.table) {
		c.mu.Lock()
		c.writes++
		fail := c.writes > c.after
		if fail {
			c.failed++
		}
		c.mu.Unlock()
		if fail {
			return nil, errDiskOnFire
		}
	}
	return c.Store.Transact(ctx, table, pk, ops)
}

// TestPlainCrashBetweenWrites stops a projector of a plain table between
// the two writes (the history committed, the table's write failed), at
// several points, and starts another on the healthy store: the
// redelivered commands, already in the history, complete the table, and
// everything ends as the model (a rebuild) says: history, table, outcomes
// and change feed.
func TestPlainCrashBetweenWrites(t *testing.T) {
	for _, after := range []int{0, 3, 40} {
		t.Run(strings.Repeat("x", after%7)+string(rune('a'+after%26)), func(t *testing.T) {
			ctx := journaltest.Context(t, 3*time.Minute)
			healthy := projectiontest.SQLite(t)
			h := projectiontest.Start(t, healthy, projectiontest.Options{})
			h.SetLayout(ctx, "orders", wire.LayoutPlain)
			h.PublishAll(ctx, workload(uint64(200+after), 600))

			cs := &crashStore{Store: healthy, table: "orders", after: after}
			runUntilDiskOnFire(t, ctx, h, cs, projection.Config{FetchBatch: 32})
			// The crash point was met: the history holds writes the table
			// lacks.
			ms, err := projectiontest.PlainMismatches(ctx, healthy, "orders")
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				t.Fatal("the table equals the history's tips after the failed write: the crash point was not met")
			}

			h.StartProjector(projection.Config{})
			h.WaitProjected(ctx)
			model := h.Model(ctx)
			projectiontest.CompareTableIn(t, healthy, projectiontest.VersionTable(t, "orders", wire.LayoutPlain), "orders", model)
			projectiontest.CheckPlain(t, healthy, "orders")
			checkOutcomesStatusOnly(t, h.Outcomes(ctx), model)
			h.CheckChangeFeed(ctx, "orders", model)
		})
	}
}

// TestPlainStaleOwner: an instance whose view of a plain partition is
// stale (another instance applied since) never moves the table's row
// back, whether it skips a redelivered command on its stale view or
// applies a new one after its fence conflicted; each write ends at the
// history's tip.
func TestPlainStaleOwner(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, time.Minute)
			st := b.Open(t)
			a := projection.NewApplier(st, projection.ApplierConfig{Layouts: plainOnly})
			bb := projection.NewApplier(st, projection.ApplierConfig{Layouts: plainOnly})
			var mu sync.Mutex
			var rs []projection.Result
			h := statuses(&rs, &mu)
			e1 := cmdEntry(1, "c1", rowOp(events.OpUpsert, "r", 1))
			e2 := cmdEntry(2, "c2", rowOp(events.OpUpsert, "r", 2))
			e3 := cmdEntry(3, "c3", rowOp(events.OpUpsert, "r", 3))
			apply := func(ap *projection.Applier, es ...projection.Entry) {
				t.Helper()
				if err := ap.Apply(ctx, "orders", "p", es, h); err != nil {
					t.Fatal(err)
				}
			}
			current := func(wantSeq int64, wantN int32) {
				t.Helper()
				e, err := st.Get(ctx, "orders", "p", "r")
				if err != nil {
					t.Fatal(err)
				}
				if e.Props[rows.ColSeq].Int != wantSeq || e.Props["n"].Int != int64(wantN) {
					t.Fatalf("the table holds r at _seq %d n=%v, want _seq %d n=%d", e.Props[rows.ColSeq].Int, e.Props["n"], wantSeq, wantN)
				}
			}
			apply(a, e1) // A caches r at 1, and the table's etag of r
			current(1, 1)
			apply(bb, e1, e2) // B, the new owner, moves r to 2
			current(2, 2)
			apply(a, e1) // redelivered to stale A: skipped on its cached view
			current(2, 2)
			apply(a, e3) // A's fence conflicts; it reloads and applies 3
			current(3, 3)
			if s := statusOf(rs, 3); s != wire.StatusApplied {
				t.Fatalf("seq 3 %s, want applied", s)
			}
			projectiontest.CheckPlain(t, st, "orders")
		})
	}
}

// TestPlainReadersSeeCurrentRows: a full-table query of a plain table,
// through the store API a reader with the Azure SDK has, returns exactly
// the current rows at their own keys (no tip:, old:, fence or marker row),
// after inserts, merges, deletes, a re-insert, a prune and an erase; the
// erased key leaves no row in either table, the prune touches only the
// history, and a redelivery of everything to a fresh instance changes
// nothing.
func TestPlainReadersSeeCurrentRows(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, 2*time.Minute)
			st := b.Open(t)
			secret := "secret"
			q := func(e projection.Entry) projection.Entry { e.Cmd.PK = "q"; return e }
			p := []projection.Entry{
				cmdEntry(1, "c1", rowOp(events.OpInsert, "a", 1), rowOp(events.OpInsert, "b", 1), rowOp(events.OpInsert, "gone", 1)),
				cmdEntry(2, "c2", rowOp(events.OpMerge, "a", 2)),
				cmdEntry(3, "c3", rowOp(events.OpDelete, "gone", 0)),
				cmdEntry(5, "c5", rowOp(events.OpDelete, "b", 0)),
				cmdEntry(6, "c6", rowOp(events.OpInsert, "b", 6)),
				{Seq: 7, ID: "prune", At: time.Date(2026, 11, 21, 10, 0, 7, 0, time.UTC),
					Cmd: &events.Command{ID: "prune", Table: "orders", PK: "p", Prune: &events.Prune{Horizon: 6}}},
			}
			qs := []projection.Entry{
				q(cmdEntry(4, "c4", rowOp(events.OpUpsert, "x:y", 1), rowOp(events.OpUpsert, secret, 1))),
				eraseEntry(8, "erase", "q", &secret),
			}
			app := projection.NewApplier(st, projection.ApplierConfig{Layouts: plainOnly, Logger: projectiontest.QuietLogger()})
			applyAll(t, app, "p", p)
			applyAll(t, app, "q", qs)

			check := func() {
				t.Helper()
				got, err := store.Collect(ctx, st, "orders", store.Query{AllPartitions: true})
				if err != nil {
					t.Fatal(err)
				}
				want := map[[2]string]int64{{"p", "a"}: 2, {"p", "b"}: 6, {"q", "x:y"}: 1}
				if len(got) != len(want) {
					t.Fatalf("a full-table query returned %d rows, want exactly the %d current ones: %+v", len(got), len(want), got)
				}
				for _, e := range got {
					n, ok := want[[2]string{e.PK, e.RK}]
					if !ok || e.Props["n"].Int != n {
						t.Errorf("row %q/%q n=%v: not a current row", e.PK, e.RK, e.Props["n"])
					}
					for _, c := range []string{rows.ColVersion, rows.ColSeq, rows.ColCmd, rows.ColAt, rows.ColOp} {
						if _, ok := e.Props[c]; !ok {
							t.Errorf("row %q/%q lacks %s", e.PK, e.RK, c)
						}
					}
					if _, ok := e.Props[rows.ColDeleted]; ok {
						t.Errorf("row %q/%q carries %s", e.PK, e.RK, rows.ColDeleted)
					}
				}
				hist := projectiontest.VersionTable(t, "orders", wire.LayoutPlain)
				for _, e := range storedRows(t, st, hist) {
					if rk, _, _, ok := rows.ParseKey(e.RK); ok && rk == secret {
						t.Errorf("the history still holds %q after its erase", e.RK)
					}
				}
				hp, err := store.Collect(ctx, st, hist, store.Query{PK: "p", From: rows.FenceKey, To: rows.FenceKeyEnd})
				if err != nil || len(hp) != 1 || rows.HorizonOf(hp[0].Props).Seq != 6 {
					t.Fatalf("the history's fence of p: %+v, %v; want the prune's horizon 6", hp, err)
				}
				projectiontest.CheckPlain(t, st, "orders")
			}
			check()
			app2 := projection.NewApplier(st, projection.ApplierConfig{Layouts: plainOnly, Logger: projectiontest.QuietLogger()})
			for _, r := range append(applyAll(t, app2, "p", p), applyAll(t, app2, "q", qs)...) {
				// A prune handled before says applied, as on versioned.
				if r.Status != projection.Skipped && !(r.ID == "prune" && r.Status == wire.StatusApplied) {
					t.Errorf("redelivered seq %d: %s, want skipped", r.Seq, r.Status)
				}
			}
			check()
		})
	}
}
