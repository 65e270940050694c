package projection

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// fetches records the Fetched and ShardStarted reports.
type fetches struct {
	NopObserver
	mu      sync.Mutex
	got     []Fetch
	started []uint64 // the applied sequences reported
}

func (f *fetches) ShardStarted(_ int, applied, _ uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, applied)
}

func (f *fetches) Fetched(_ int, x Fetch) { f.mu.Lock(); defer f.mu.Unlock(); f.got = append(f.got, x) }

func (f *fetches) take() []Fetch {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.got
	f.got = nil
	return got
}

// TestObserveIdle: an empty fetch is reported only once the consumer's
// state confirms it, at most every idleCheck: with the pending count and
// the journal time of the first pending message when the server returned
// nothing although messages wait, as caught up when none do.
func TestObserveIdle(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rec := &fetches{}
	p, err := New(ctx, js, st, Config{Journal: journal.Config{Shards: 1}, Shards: []int{0}, Observer: rec, NoChangeFeed: true})
	if err != nil {
		t.Fatal(err)
	}
	cons, _, err := p.openConsumer(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter(js, p.j.Name())
	var first time.Time
	for i, id := range []string{"a", "b", "c"} {
		if _, err := w.Publish(ctx, &events.Command{ID: id, Table: "idle", PK: "p", Ops: []events.RowOp{{Op: events.OpDelete, RK: id}}}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			m, err := p.j.Get(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			first = m.Time
		}
	}

	p.observeFetch(ctx, 0, cons, nil) // as if the server had delivered nothing in time
	if got := rec.take(); len(got) != 1 || got[0].Messages != 0 || got[0].Pending != 3 || !got[0].Oldest.Equal(first) {
		t.Errorf("empty fetch with 3 pending reported %+v, want 3 pending, oldest %v", got, first)
	}
	p.observeFetch(ctx, 0, cons, nil)
	if got := rec.take(); len(got) != 0 {
		t.Errorf("a second empty fetch within %v reported %+v, want nothing", idleCheck, got)
	}

	pl, err := p.newPuller(cons)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.stop()
	msgs, err := pl.next(ctx, 10*time.Second, nil)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("pull: %d messages, %v", len(msgs), err)
	}
	if err := msgs[2].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	p.idle.mu.Lock()
	p.idle.last[0] = time.Time{} // idleCheck has passed
	p.idle.mu.Unlock()
	p.observeFetch(ctx, 0, cons, nil)
	if got := rec.take(); len(got) != 1 || got[0] != (Fetch{}) {
		t.Errorf("empty fetch when caught up reported %+v, want one with nothing pending", got)
	}

	// Reopening resets the existing consumer: reported as a start too.
	if _, _, err := p.openConsumer(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if fmt.Sprint(rec.started) != "[0 3]" {
		t.Errorf("shard starts reported after %v, want [0 3]: the new consumer, then the reset one", rec.started)
	}
}
