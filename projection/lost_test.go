package projection_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/projection/status"
	"github.com/tablejournal/tablejournal/wire"
)

func oneRow(id string, kind events.OpKind, n int, ifVersion *int64) *events.Command {
	op := events.RowOp{Op: kind, RK: "x", IfVersion: ifVersion}
	if kind != events.OpDelete {
		op.Entity = edm.Entity{"n": edm.Int32(int32(n))}
	}
	return &events.Command{ID: id, Table: "orders", PK: "p", Ops: []events.RowOp{op}}
}

// TestLostWrite: the store confirms a transaction and loses it. The
// projector, whose row cache holds what it wrote, must not build on it: at
// the next command it finds the partition's fence behind what it wrote,
// says so at ERROR and in its counters, drops its cache and goes on from
// the table's state (the store wins), so the row's history has no hole.
// Every command still gets an outcome; those after the loss equal a model
// of the journal without the lost command.
func TestLostWrite(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, 2*time.Minute)
			real := b.Open(t)
			lossy := &projectiontest.LosingStore{Store: real, Lose: "c3"}
			h := projectiontest.Start(t, lossy, projectiontest.Options{})
			var logs projectiontest.SyncBuffer
			proj := h.StartProjector(projection.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
			two := int64(2)
			cmds := []*events.Command{
				oneRow("c1", events.OpInsert, 1, nil),
				oneRow("c2", events.OpMerge, 2, nil),
				oneRow("c3", events.OpMerge, 3, nil), // confirmed, lost
				oneRow("c4", events.OpMerge, 4, nil),
				oneRow("c5", events.OpReplace, 5, &two), // x is at version 2 in the table
				oneRow("c6", events.OpDelete, 0, nil),
				oneRow("c7", events.OpInsert, 7, nil),
			}
			// One at a time, so that the loss happens with the row cached.
			for _, c := range cmds {
				h.PublishAll(ctx, []*events.Command{c})
				h.WaitProjected(ctx)
			}
			if lossy.Lost() != 1 {
				t.Fatalf("%d writes lost, want 1", lossy.Lost())
			}
			outcomes := h.Outcomes(ctx)
			if len(outcomes) != len(cmds) {
				t.Fatalf("%d outcomes for %d commands", len(outcomes), len(cmds))
			}
			// The model of what the table holds: the journal without c3.
			m := projectiontest.NewModel()
			for i, c := range cmds {
				if c.ID != "c3" {
					m.Apply(uint64(i+1), c)
				}
			}
			projectiontest.CompareTable(t, real, "orders", m)
			for seq, want := range m.Status {
				if o := outcomes[seq]; string(o.Status) != want {
					t.Errorf("seq %d (%s): %s (%s), want %s", seq, o.ID, o.Status, o.Reason, want)
				}
			}
			if o := outcomes[3]; o.Status != wire.StatusApplied {
				t.Errorf("c3: %s; its outcome was published when the store confirmed it", o.Status)
			}
			// The partition stays reported behind: the projector wrote past
			// the loss, so its fence no longer shows it.
			if got := proj.Stats().Behind.List(); len(got) != 1 || got[0].PK != "p" || got[0].AppliedSeq != 3 || got[0].TableSeq != 2 {
				t.Errorf("behind: %v; want orders/p at seq 2 with seq 3 applied", got)
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "disagrees") || !strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("no ERROR about the table disagreeing; logs:\n%s", logs.String())
			}

			// The projector wrote past the loss, so the fence no longer
			// shows it: what was found is in the durable record. Projector
			// status lists it with no projector running, and a projector
			// started again (a restart, another replica) reports it at once.
			ov, err := status.Read(ctx, h.JS, status.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if ov.Totals.BehindCount != 1 || len(ov.Totals.Behind) != 1 || ov.Totals.Behind[0].PK != "p" || ov.Totals.Behind[0].AppliedSeq != 3 {
				t.Errorf("status with no projector running: %d behind, %v; want orders/p with seq 3 applied", ov.Totals.BehindCount, ov.Totals.Behind)
			}
			var again projectiontest.SyncBuffer
			p2 := h.StartProjector(projection.Config{InstanceID: "replica-2", Logger: slog.New(slog.NewTextHandler(&again, &slog.HandlerOptions{Level: slog.LevelError}))})
			projectiontest.WaitFor(t, ctx, "the restarted projector reports orders/p behind", func() (bool, error) { return p2.Stats().Behind.Len() > 0, nil })
			if got := p2.Stats().Behind.List(); len(got) != 1 || got[0].PK != "p" || got[0].AppliedSeq != 3 || got[0].TableSeq != 2 || got[0].Cmd != "c3" {
				t.Errorf("behind after a restart: %v; want orders/p at seq 2 with seq 3 (c3) applied", got)
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(again.String(), "partitions are recorded behind the journal") || !strings.Contains(again.String(), "partitions=1") {
				t.Errorf("the restarted projector does not say at ERROR that a partition is recorded behind; logs:\n%s", again.String())
			}
		})
	}
}

// TestSkippedWithoutOutcome: a redelivered command whose row moved on past
// it, with no version of its own and no outcome (the table or the outcomes
// stream lost them), is never acknowledged without an outcome: the
// projector rebuilds one from the row's history as it stood before the
// command, reports the disagreement, and goes on.
func TestSkippedWithoutOutcome(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, 2*time.Minute)
			st := b.Open(t)
			h := projectiontest.Start(t, st, projectiontest.Options{})
			cmds := []*events.Command{
				oneRow("c1", events.OpInsert, 1, nil),
				oneRow("c2", events.OpInsert, 2, nil), // rejected: x exists
				oneRow("c3", events.OpMerge, 3, nil),  // applied, then lost with its outcome
				oneRow("c4", events.OpMerge, 4, nil),
			}
			h.PublishAll(ctx, cmds)
			// The table holds c1 and c4 only, as if c2's outcome and c3's
			// version were lost; nothing is in the outcomes stream.
			app := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
			for _, seq := range []uint64{1, 4} {
				e := projection.Entry{Seq: seq, ID: cmds[seq-1].ID, Cmd: cmds[seq-1], At: time.Unix(int64(seq), 0).UTC()}
				if err := app.Apply(ctx, "orders", "p", []projection.Entry{e}, projection.Hooks{}); err != nil {
					t.Fatal(err)
				}
			}
			var logs projectiontest.SyncBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
			p := h.StartProjector(projection.Config{Logger: log})
			h.WaitProjected(ctx) // every message gets an outcome
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}
			outcomes := h.Outcomes(ctx)
			want := map[uint64]wire.Status{1: wire.StatusApplied, 2: wire.StatusRejected,
				3: wire.StatusRejected, 4: wire.StatusApplied}
			for seq, w := range want {
				if o := outcomes[seq]; o.Status != w {
					t.Errorf("seq %d: %s (%s), want %s", seq, o.Status, o.Reason, w)
				}
			}
			if r := outcomes[3].Reason; !strings.Contains(r, "not in the table") {
				t.Errorf("c3's outcome says %q, want that its effect is not in the table", r)
			}
			if n := p.Stats().Disagreements.Load(); n != 2 {
				t.Errorf("%d disagreements, want 2 (c2's missing outcome, c3's missing version)", n)
			}
			if !strings.Contains(logs.String(), "seq 3 (command c3)") {
				t.Errorf("the ERROR does not name seq 3 and its command; logs:\n%s", logs.String())
			}
		})
	}
}

// TestOtherDurableNotBehind: a projector of another durable name filling
// another store (a second region, a rebuild) finds in the shared outcomes
// stream commands its store has not seen yet; that is not a loss. Only
// commands its own consumer acknowledged are looked at, so it reports no
// partition behind, when it starts and when it starts again part way.
func TestOtherDurableNotBehind(t *testing.T) {
	ctx := journaltest.Context(t, 2*time.Minute)
	h := projectiontest.Start(t, projectiontest.SQLite(t), projectiontest.Options{})
	w := projectiontest.NewWorkload(7, "orders", 20, 5)
	cmds := make([]*events.Command, 300)
	for i := range cmds {
		cmds[i] = w.Next()
	}
	h.PublishAll(ctx, cmds[:200])
	h.StartProjector(projection.Config{})
	h.WaitProjected(ctx)

	fresh := projectiontest.SQLite(t)
	var logs projectiontest.SyncBuffer
	run := func(upTo int) *projection.Projector {
		p, err := projection.New(ctx, h.JS, fresh, projection.Config{Durable: "second",
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(rctx) }()
		want := projectiontest.TableVersions(t, h.Store, "orders")
		projectiontest.WaitFor(t, ctx, fmt.Sprintf("the second projection reaches %d commands", upTo), func() (bool, error) {
			got, err := projectiontest.ReadVersions(ctx, fresh, "orders")
			return err == nil && projectiontest.SameVersionCount(got, want), err
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := run(200); p.Stats().Behind.Len() != 0 || p.Stats().Disagreements.Load() != 0 {
		t.Errorf("a fresh store under another durable: %d partitions behind, %d disagreements; want none",
			p.Stats().Behind.Len(), p.Stats().Disagreements.Load())
	}
	h.PublishAll(ctx, cmds[200:])
	h.WaitProjected(ctx)
	if p := run(300); p.Stats().Behind.Len() != 0 || p.Stats().Disagreements.Load() != 0 {
		t.Errorf("restarted behind the first projector: %d partitions behind, %d disagreements; want none",
			p.Stats().Behind.Len(), p.Stats().Disagreements.Load())
	}
	if strings.Contains(logs.String(), "lost confirmed writes") {
		t.Errorf("a loss reported:\n%s", logs.String())
	}
}
