package rebuild_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestLostWritesRebuildPartition takes a confirmed write away under the
// projector: the last command of partition p2 is confirmed by the store
// and never written, and nothing is written to p2 after it, so the
// projector, running on, never reads p2's fence again. A projector started
// afterwards checks its shards against the journal before applying
// anything: it must report p2 behind (ERROR naming it and the gap, the
// counters), while before this check a restart saw nothing. The
// documented way back, replay rebuild --table T --pk P with the projectors
// stopped, must then make replay verify clean.
func TestLostWritesRebuildPartition(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, 3*time.Minute)
			real := b.Open(t)
			lossy := &projectiontest.LosingStore{Store: real, Lose: "c4"}
			h := projectiontest.Start(t, lossy, projectiontest.Options{})
			h.StartProjector(projection.Config{Logger: replaytest.Quiet})
			row := func(id, pk string, kind events.OpKind, n int32) *events.Command {
				return &events.Command{ID: id, Table: "orders", PK: pk, Ops: []events.RowOp{{Op: kind, RK: "x", Entity: edm.Entity{"n": edm.Int32(n)}}}}
			}
			// Two rounds, so that c4 has a transaction of its own.
			h.PublishAll(ctx, []*events.Command{row("c1", "p1", events.OpInsert, 1), row("c2", "p2", events.OpInsert, 2)})
			h.WaitProjected(ctx)
			h.PublishAll(ctx, []*events.Command{
				row("c3", "p1", events.OpMerge, 3), row("c4", "p2", events.OpMerge, 4), // c4: confirmed, lost
				row("c5", "p1", events.OpMerge, 5),
			})
			h.WaitProjected(ctx)
			if o := h.AwaitOutcomes(ctx, []string{"c4"})["c4"]; o.Status != wire.StatusApplied || lossy.Lost() != 1 {
				t.Fatalf("c4: %s, %d writes lost; want applied, 1", o.Status, lossy.Lost())
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}

			var logs projectiontest.SyncBuffer
			p := h.StartProjector(projection.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
			projectiontest.WaitFor(t, ctx, "p2 reported behind", func() (bool, error) { return p.Stats().Behind.Len() > 0, nil })
			got := p.Stats().Behind.List()
			if len(got) != 1 || got[0].Table != "orders" || got[0].PK != "p2" || got[0].TableSeq != 2 || got[0].AppliedSeq != 4 || got[0].Cmd != "c4" {
				t.Errorf("behind: %v; want orders/p2 at seq 2 with seq 4 (c4) applied", got)
			}
			if n := p.Stats().Disagreements.Load(); n < 1 {
				t.Errorf("%d disagreements counted", n)
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"level=ERROR", "partition is behind the journal", "pk=p2", "table_seq=2", "applied_seq=4",
				`repair="replay rebuild --table orders --pk \"p2\""`} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("the log lacks %s:\n%s", want, logs.String())
				}
			}

			src, err := replay.New(ctx, replay.Config{Store: real, JetStream: h.JS, Logger: replaytest.Quiet})
			if err != nil {
				t.Fatal(err)
			}
			rb := rebuild.New(src)
			before, err := rb.Verify(ctx, rebuild.VerifyConfig{Table: "orders"})
			if err != nil {
				t.Fatal(err)
			}
			if before.Missing+before.Extra+before.Changed == 0 {
				t.Fatal("verify finds the table equal to its journal before the repair: nothing was lost")
			}
			st, err := rb.RebuildPartition(ctx, "orders", "p2")
			if err != nil {
				t.Fatal(err)
			}
			if st.Commands != 2 || st.Applied != 2 {
				t.Errorf("rebuilt p2 with %d commands, %d applied; want 2, 2", st.Commands, st.Applied)
			}
			after, err := rb.Verify(ctx, rebuild.VerifyConfig{Table: "orders"})
			if err != nil {
				t.Fatal(err)
			}
			if n := after.Missing + after.Extra + after.Changed; n != 0 {
				t.Errorf("verify after the repair: %d missing, %d extra, %d changed", after.Missing, after.Extra, after.Changed)
			}
		})
	}
}

// TestRebuildBehindAfterWritingPast takes a confirmed write away and lets
// the projector write past it: c2 on p2 is lost, c4 on p2 lands on top,
// so p2's fence is at c4 and only the durable record shows the loss. A
// projector restarted afterwards must still report p2 (it used to report
// nothing, while replay verify found differences); RebuildBehind must
// rebuild p2, clear it from the record, and make verify clean; a projector
// started then reports nothing.
func TestRebuildBehindAfterWritingPast(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, 3*time.Minute)
			real := b.Open(t)
			lossy := &projectiontest.LosingStore{Store: real, Lose: "c2"}
			h := projectiontest.Start(t, lossy, projectiontest.Options{})
			h.StartProjector(projection.Config{Logger: replaytest.Quiet})
			row := func(id, pk string, kind events.OpKind, n int32) *events.Command {
				return &events.Command{ID: id, Table: "orders", PK: pk, Ops: []events.RowOp{{Op: kind, RK: "x", Entity: edm.Entity{"n": edm.Int32(n)}}}}
			}
			// One at a time, so that c2 has a transaction of its own and c4
			// is written on top of its loss.
			for _, c := range []*events.Command{row("c1", "p2", events.OpInsert, 1), row("c2", "p2", events.OpMerge, 2),
				row("c3", "p1", events.OpInsert, 3), row("c4", "p2", events.OpMerge, 4)} {
				h.PublishAll(ctx, []*events.Command{c})
				h.WaitProjected(ctx)
			}
			if lossy.Lost() != 1 {
				t.Fatalf("%d writes lost, want 1", lossy.Lost())
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}

			p := h.StartProjector(projection.Config{Logger: replaytest.Quiet})
			projectiontest.WaitFor(t, ctx, "p2 reported behind after a restart", func() (bool, error) { return p.Stats().Behind.Len() > 0, nil })
			if got := p.Stats().Behind.List(); len(got) != 1 || got[0].PK != "p2" || got[0].AppliedSeq != 2 || got[0].Cmd != "c2" {
				t.Errorf("behind after a restart: %v; want orders/p2 with seq 2 (c2) applied", got)
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}

			src, err := replay.New(ctx, replay.Config{Store: real, JetStream: h.JS, Logger: replaytest.Quiet})
			if err != nil {
				t.Fatal(err)
			}
			rb := rebuild.New(src)
			before, err := rb.Verify(ctx, rebuild.VerifyConfig{Table: "orders"})
			if err != nil {
				t.Fatal(err)
			}
			if before.Missing+before.Extra+before.Changed == 0 {
				t.Fatal("verify finds the table equal to its journal before the repair: nothing was lost")
			}
			st, err := rb.RebuildBehind(ctx, "orders")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Rebuilt) != 1 || st.Rebuilt[0].PK != "p2" || !st.Rebuilt[0].Cleared || st.Rebuilt[0].Applied != 3 || len(st.Left) != 0 {
				t.Errorf("rebuilt %+v, left %v; want p2 rebuilt with 3 commands applied and cleared, none left", st.Rebuilt, st.Left)
			}
			after, err := rb.Verify(ctx, rebuild.VerifyConfig{Table: "orders"})
			if err != nil {
				t.Fatal(err)
			}
			if n := after.Missing + after.Extra + after.Changed; n != 0 {
				t.Errorf("verify after the repair: %d missing, %d extra, %d changed", after.Missing, after.Extra, after.Changed)
			}
			if again, err := rb.RebuildBehind(ctx, ""); err != nil || len(again.Rebuilt)+len(again.Left) != 0 {
				t.Errorf("a second RebuildBehind: %+v, %v; want nothing to do", again, err)
			}

			var logs projectiontest.SyncBuffer
			p = h.StartProjector(projection.Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
			h.PublishAll(ctx, []*events.Command{row("c5", "p2", events.OpMerge, 5)})
			h.WaitProjected(ctx)
			if n := p.Stats().Behind.Len(); n != 0 {
				t.Errorf("%d partitions behind after the rebuild: %v", n, p.Stats().Behind.List())
			}
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}
			if logs.String() != "" {
				t.Errorf("errors logged after the rebuild:\n%s", logs.String())
			}
		})
	}
}
