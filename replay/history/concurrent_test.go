package history_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// writeBeforeVersions wraps a real store to do what a running projector can
// do at any moment: just before the first read of version rows, it applies
// one more command, which moves the tip it replaces into a version row.
type writeBeforeVersions struct {
	store.Store
	once  sync.Once
	write func()
}

func (w *writeBeforeVersions) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	if strings.HasPrefix(q.From, rows.OldPrefix) {
		w.once.Do(w.write)
	}
	return w.Store.Query(ctx, table, q)
}

// TestReadsDuringWrites: asof of a partition and of a table, and a
// snapshot, each taken while the projector replaces a row between their
// reads of tips and of version rows, still give the row as it was at the
// point, once.
func TestReadsDuringWrites(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	apply := func(t *testing.T, st store.Store, table string, seq uint64, rk string, n int32) {
		t.Helper()
		id := "c" + string(rune('0'+seq))
		e := projection.Entry{Seq: seq, At: at, ID: id, Cmd: &events.Command{ID: id, Table: table, PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: rk, Entity: edm.Entity{"n": edm.Int32(n)}}}}}
		if err := projection.NewApplier(st, projection.ApplierConfig{CacheRows: -1}).Apply(ctx, table, "p", []projection.Entry{e}, projection.Hooks{}); err != nil {
			t.Fatal(err)
		}
	}
	// setup writes a at seq 1 and b at seq 2, and returns a replayer whose
	// store replaces a at seq 3 before its first read of version rows.
	setup := func(t *testing.T, b replaytest.Backend) (*replay.Source, store.Store, string) {
		base := b.Open(t)
		table := replaytest.UniqueTable("During")
		apply(t, base, table, 1, "a", 1)
		apply(t, base, table, 2, "b", 1)
		st := &writeBeforeVersions{Store: base}
		st.write = func() { apply(t, base, table, 3, "a", 2) }
		rp, err := replay.New(ctx, replay.Config{Store: st, Logger: replaytest.Quiet})
		if err != nil {
			t.Fatal(err)
		}
		return rp, base, table
	}
	for _, b := range replaytest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			for _, part := range []store.Partition{store.InPartition("p"), store.AllPartitions} {
				t.Run("asof "+part.String(), func(t *testing.T) {
					rp, _, table := setup(t, b)
					got := map[string]int32{}
					err := history.New(rp).AsOf(ctx, table, part, 2, func(r rows.Row) error {
						got[r.RK] = int32(r.Props["n"].Int)
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != 2 || got["a"] != 1 || got["b"] != 1 {
						t.Fatalf("asof at 2 = %v, want a=1 b=1", got)
					}
				})
			}
			t.Run("snapshot", func(t *testing.T) {
				rp, base, table := setup(t, b)
				var buf bytes.Buffer
				if _, err := snapshot.New(rp).Take(ctx, &buf, snapshot.Config{Table: table, Seq: 2}); err != nil {
					t.Fatal(err)
				}
				into := replaytest.UniqueTable("Loaded")
				if _, err := snapshot.New(rp).Load(ctx, &buf, snapshot.LoadConfig{Into: into, SkipErasureCheck: true}); err != nil {
					t.Fatal(err)
				}
				rows, err := store.Collect(ctx, base, into, store.Query{AllPartitions: true})
				if err != nil {
					t.Fatal(err)
				}
				var keys []string
				for _, e := range rows {
					keys = append(keys, e.RK)
				}
				// At seq 2 each row has one version, its tip; the partition's
				// fence comes with them (it carries the prune horizon).
				if want := []string{"fence", "tip:a", "tip:b"}; strings.Join(keys, ",") != strings.Join(want, ",") {
					t.Fatalf("loaded rows %q, want %q", keys, want)
				}
			})
		})
	}
}
