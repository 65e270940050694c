package projection_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/store"
)

// hangingStore wraps a real store whose CreateTable does not answer until
// release is closed, as a store behind a refused connection looks while
// the Azure SDK retries it inside one call (about 10 s).
type hangingStore struct {
	store.Store
	release chan struct{}
}

func (h *hangingStore) CreateTable(ctx context.Context, table string) error {
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.Store.CreateTable(ctx, table)
}

// records keeps the times and messages of log records.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) times(msg string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, rec := range r.recs {
		if rec.Message == msg {
			out = append(out, rec.Time)
		}
	}
	return out
}

// TestStoreStallWarnings: a store call that hangs without failing (the
// SDK retrying a refused connection inside it) is warned about once it has
// gone unanswered for the warning interval, and again every interval while
// it lasts, not only when a failure comes back; when the store answers,
// the projector says so. Before, the first warning came only when the
// hung call failed (about 10 s in with the default SDK retries), and then
// once per such failure.
func TestStoreStallWarnings(t *testing.T) {
	const every = 250 * time.Millisecond
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, time.Minute)
			hang := &hangingStore{Store: b.Open(t), release: make(chan struct{})}
			var logs records
			a := projection.NewApplier(hang, projection.ApplierConfig{Logger: slog.New(&logs)})
			stop := projection.WatchStore(a, every)
			defer stop()
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				cmd := &events.Command{ID: "c1", Table: "stalled", PK: "p",
					Ops: []events.RowOp{{Op: events.OpInsert, RK: "r", Entity: edm.Entity{"n": edm.Int32(1)}}}}
				done <- a.Apply(ctx, "stalled", "p", []projection.Entry{{Seq: 1, ID: "c1", Cmd: cmd, At: start}}, projection.Hooks{})
			}()
			waitFor(ctx, t, "three warnings", func() bool { return len(logs.times(outageWarning)) >= 3 })
			close(hang.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, "the store is back", func() bool { return len(logs.times("table store available again")) == 1 })
			warns := logs.times(outageWarning)
			if first := warns[0].Sub(start); first < every {
				t.Errorf("first warning %s in, before the store went %s unanswered", first, every)
			}
			// The watch ticks every interval; the records' own clock reads
			// a tick late or early by scheduling, so a gap may fall short of
			// the interval by a little (249.96 ms was seen), never by a tenth.
			for i := 1; i < len(warns); i++ {
				if gap := warns[i].Sub(warns[i-1]); gap < every*9/10 {
					t.Errorf("warnings %d and %d %s apart, more often than every %s", i-1, i, gap, every)
				}
			}
		})
	}
}

// waitFor waits until cond holds, failing the test at ctx's deadline.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}
