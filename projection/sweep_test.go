package projection_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/projection/status"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// idleCmd is the i-th command of the idle workload: row r<i> of partition
// q<i%5>, as in the repro.
func idleCmd(i int) *events.Command {
	return &events.Command{ID: fmt.Sprintf("idle-%d", i), Table: "idlet", PK: fmt.Sprintf("q%d", i%5),
		Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i), Entity: edm.Entity{"n": edm.Int32(int32(i))}}}}
}

// sweptSince waits until every shard p applies has completed a sweep after
// since, and at least one shard is swept.
func sweptSince(t *testing.T, ctx context.Context, p *projection.Projector, since time.Time) {
	t.Helper()
	projectiontest.WaitFor(t, ctx, "a complete sweep of every shard", func() (bool, error) {
		done := p.Stats().Sweeps.Completed()
		for _, at := range done {
			if !at.After(since) {
				return false, nil
			}
		}
		return len(done) > 0, nil
	})
}

// TestSweepFindsIdleLoss: the store loses confirmed writes of partitions
// that nobody writes afterwards, the newest command of one (its fence
// stays older) and all of another (its rows deleted behind the
// projector's back, as a restored account or an Azurite killed before it
// flushed leaves them). Neither the shard's start (long past) nor a later
// command (none comes) finds them; the sweep does: each is logged at
// ERROR, counted, recorded for projector status, and no other partition
// is reported.
func TestSweepFindsIdleLoss(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, 2*time.Minute)
			real := b.Open(t)
			lossy := &projectiontest.LosingStore{Store: real, Lose: "idle-17"} // q2's last command
			h := projectiontest.Start(t, lossy, projectiontest.Options{})
			var logs projectiontest.SyncBuffer
			proj := h.StartProjector(projection.Config{SweepInterval: 200 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
			seqs := make(map[string]uint64)
			// One at a time, so that idle-17 is lost alone and q2's fence
			// stays at idle-12.
			for i := range 20 {
				c := idleCmd(i)
				seqs[c.ID] = h.PublishAll(ctx, []*events.Command{c})[0]
				h.WaitProjected(ctx)
			}
			if lossy.Lost() != 1 {
				t.Fatalf("%d writes lost, want 1", lossy.Lost())
			}
			ents, err := store.Collect(ctx, real, "idlet", store.Query{PK: "q4"})
			if err != nil {
				t.Fatal(err)
			}
			var del []store.Op
			for _, e := range ents {
				del = append(del, store.Op{Kind: store.Delete, RK: e.RK})
			}
			if _, err := real.Transact(ctx, "idlet", "q4", del); err != nil {
				t.Fatal(err)
			}

			projectiontest.WaitFor(t, ctx, "the sweep finds q2 and q4 behind", func() (bool, error) {
				return proj.Stats().Behind.Len() >= 2, nil
			})
			want := []wire.BehindPartition{
				{Table: "idlet", PK: "q2", TableSeq: seqs["idle-12"], AppliedSeq: seqs["idle-17"], Cmd: "idle-17"},
				{Table: "idlet", PK: "q4", TableSeq: 0, AppliedSeq: seqs["idle-4"], Cmd: "idle-4"},
			}
			got := proj.Stats().Behind.List()
			if len(got) != len(want) {
				t.Fatalf("behind: %+v, want %+v", got, want)
			}
			for i, g := range got {
				w := want[i]
				if g.Table != w.Table || g.PK != w.PK || g.TableSeq != w.TableSeq || g.AppliedSeq != w.AppliedSeq || g.Cmd != w.Cmd {
					t.Errorf("behind[%d] = %s/%s at seq %d with %d (%s) applied; want %s/%s at %d with %d (%s)",
						i, g.Table, g.PK, g.TableSeq, g.AppliedSeq, g.Cmd, w.Table, w.PK, w.TableSeq, w.AppliedSeq, w.Cmd)
				}
			}
			if n := proj.Stats().Disagreements.Load(); n != 2 {
				t.Errorf("%d disagreements, want 2", n)
			}
			projectiontest.WaitFor(t, ctx, "projector status lists both", func() (bool, error) {
				ov, err := status.Read(ctx, h.JS, status.Config{})
				return err == nil && ov.Totals.BehindCount == 2, err
			})
			// A pass after the finding reports nothing more.
			sweptSince(t, ctx, proj, time.Now())
			if n := proj.Stats().Behind.Len(); n != 2 {
				t.Errorf("%d partitions behind after another sweep, want 2", n)
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}
			for _, pk := range []string{"q2", "q4"} {
				if !strings.Contains(logs.String(), "lost confirmed writes") || !strings.Contains(logs.String(), "pk="+pk) {
					t.Errorf("no ERROR naming %s; logs:\n%s", pk, logs.String())
				}
			}
		})
	}
}

// TestSweepNoFalsePositives: the sweep runs as fast as it may while
// every partition is busy (the random workload: applied, rejected,
// duplicate and re-sent commands), so it reads fences and journal
// positions while commands apply. A store that keeps its writes is never
// reported behind. Run with -race -count=20.
func TestSweepNoFalsePositives(t *testing.T) {
	ctx := journaltest.Context(t, 2*time.Minute)
	h := projectiontest.Start(t, projectiontest.SQLite(t), projectiontest.Options{})
	var logs projectiontest.SyncBuffer
	proj := h.StartProjector(projection.Config{SweepInterval: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
	w := projectiontest.NewWorkload(11, "busy", 24, 3)
	var mark time.Time
	for chunk := 0; ; chunk++ {
		h.PublishAll(ctx, w.Take(40))
		if chunk == 2 {
			mark = time.Now()
		}
		if chunk < 10 {
			continue
		}
		// Publishing on until every shard was swept once more meanwhile.
		done := proj.Stats().Sweeps.Completed()
		busy := len(done) > 0
		for _, at := range done {
			busy = busy && at.After(mark)
		}
		if busy || ctx.Err() != nil {
			break
		}
	}
	h.WaitProjected(ctx)
	h.CheckAcknowledged(ctx)
	sweptSince(t, ctx, proj, time.Now())
	if err := h.StopProjector(); err != nil {
		t.Fatal(err)
	}
	if n, d := proj.Stats().Behind.Len(), proj.Stats().Disagreements.Load(); n != 0 || d != 0 {
		t.Errorf("%d partitions reported behind, %d disagreements, of a store that lost nothing: %v", n, d, proj.Stats().Behind.List())
	}
	if strings.Contains(logs.String(), "lost confirmed writes") {
		t.Errorf("a loss reported:\n%s", logs.String())
	}
}

// fenceHook wraps a real store: the first read of partition pk's fence
// once armed (the sweep's: the projector has the fence cached) runs hook,
// before the read or after it.
type fenceHook struct {
	store.Store
	pk    string
	after bool
	armed atomic.Bool
	hook  func(context.Context) error
	err   chan error
}

func (f *fenceHook) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	if pk != f.pk || rk != rows.FenceKey || !f.armed.CompareAndSwap(true, false) {
		return f.Store.Get(ctx, table, pk, rk)
	}
	if !f.after {
		f.err <- f.hook(ctx)
		return f.Store.Get(ctx, table, pk, rk)
	}
	e, err := f.Store.Get(ctx, table, pk, rk)
	f.err <- f.hook(ctx)
	return e, err
}

// TestSweepRace: a command of a partition applies while the sweep checks
// the partition, just before the sweep reads its fence, or just after
// (the sweep then holds a fence older than a command that applied). The
// sweep must not report the partition: it looks only at what was
// acknowledged before it read the fence, and reads the fence again
// before it says a command is missing.
func TestSweepRace(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) {
			ctx := journaltest.Context(t, 2*time.Minute)
			hooked := &fenceHook{Store: projectiontest.SQLite(t), pk: "q1", after: after, err: make(chan error, 1)}
			h := projectiontest.Start(t, hooked, projectiontest.Options{})
			var logs projectiontest.SyncBuffer
			proj := h.StartProjector(projection.Config{SweepInterval: 50 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
			for i := range 10 {
				h.PublishAll(ctx, []*events.Command{idleCmd(i)})
			}
			h.WaitProjected(ctx)
			// While the sweep checks q1: a command of q1 is published and
			// applied (its outcome stored) before the sweep goes on.
			hooked.hook = func(ctx context.Context) error {
				c := idleCmd(21) // q1
				if _, err := h.Writer.Publish(ctx, c); err != nil {
					return err
				}
				for {
					o, err := outcomes.NewReader(h.JS).Latest(ctx, c.ID)
					if err == nil && o.Status == wire.StatusApplied {
						return nil
					}
					select {
					case <-ctx.Done():
						return fmt.Errorf("%s never applied: %w (%v)", c.ID, ctx.Err(), err)
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
			hooked.armed.Store(true)
			var fired time.Time
			select {
			case err := <-hooked.err:
				if err != nil {
					t.Fatal(err)
				}
				fired = time.Now()
			case <-ctx.Done():
				t.Fatal("the sweep never read q1's fence")
			}
			sweptSince(t, ctx, proj, fired)
			h.WaitProjected(ctx)
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}
			if n, d := proj.Stats().Behind.Len(), proj.Stats().Disagreements.Load(); n != 0 || d != 0 {
				t.Errorf("%d partitions reported behind, %d disagreements: %v", n, d, proj.Stats().Behind.List())
			}
			if strings.Contains(logs.String(), "lost confirmed writes") {
				t.Errorf("a loss reported:\n%s", logs.String())
			}
		})
	}
}
