package projection_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/projection/status"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestHeldPartition: rows another program wrote into a partition's layout
// (a "fence" row, a "tip:" row without the system columns) hold that
// partition only (SPEC §5, "A held partition"). On a journal of one shard,
// so every partition shares the held partition's shard: the commands of
// other partitions of the same table and of another table apply, also
// after a restart; the held ones get no outcome and are not acknowledged;
// the projector runs on and names table, partition, sequence, command and
// row. Once the rows are removed, a resume applies the held commands
// exactly once, as a model of the whole journal says.
//
// On Azurite the foreign rows are written through store/azure, that is
// the Azure SDK (aztables), as another program would.
func TestHeldPartition(t *testing.T) {
	defer projection.SetHeldRetry(time.Hour, time.Hour)() // no retry but the asked one
	for _, b := range backends() {
		if strings.HasSuffix(b.Name, "-paged") {
			continue
		}
		t.Run(b.Name, func(t *testing.T) { testHeldPartition(t, b.Open(t)) })
	}
}

func testHeldPartition(t *testing.T, st store.Store) {
	ctx := journaltest.Context(t, 2*time.Minute)
	h := projectiontest.Start(t, st, projectiontest.Options{Journal: journal.Config{Shards: 1}})
	foreign := func(kind store.OpKind, pk, rk string) {
		t.Helper()
		var props edm.Entity
		if kind != store.Delete {
			props = edm.Entity{"status": edm.String("written by another program")}
		}
		if _, err := st.Transact(ctx, "legacy", pk, []store.Op{{Kind: kind, RK: rk, Props: props}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateTable(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}
	foreign(store.Insert, "cust-0", "fence")
	foreign(store.Insert, "cust-1", "tip:order-1")

	var logs projectiontest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	proj := h.StartProjector(projection.Config{Journal: journal.Config{Shards: 1}, Logger: logger})
	cmd := func(id, table, pk, rk string) *events.Command {
		return &events.Command{ID: id, Table: table, PK: pk, Ops: []events.RowOp{
			{Op: events.OpUpsert, RK: rk, Entity: edm.Entity{"status": edm.String(id)}}}}
	}
	first := []*events.Command{
		cmd("h1", "legacy", "cust-0", "order-0"), // held: the fence
		cmd("a1", "legacy", "cust-2", "order-0"),
		cmd("b1", "orders", "p1", "x"),
		cmd("h2", "legacy", "cust-1", "order-1"), // held: tip:order-1
		cmd("h3", "legacy", "cust-0", "order-1"),
		cmd("a2", "legacy", "cust-2", "order-1"),
		cmd("h4", "legacy", "cust-1", "order-2"), // held: its partition is
	}
	seqs := h.PublishAll(ctx, first)
	h.AwaitOutcomes(ctx, []string{"a1", "b1", "a2"})
	projectiontest.WaitFor(t, ctx, "two partitions held", func() (bool, error) { return proj.Stats().Held.Len() == 2, nil })
	// A later batch of the shard goes on too.
	h.PublishAll(ctx, []*events.Command{cmd("b2", "orders", "p1", "y"), cmd("h5", "legacy", "cust-0", "order-2")})
	h.AwaitOutcomes(ctx, []string{"b2"})

	checkHeld := func(p *projection.Projector) {
		t.Helper()
		got := p.Stats().Held.List()
		want := []string{
			fmt.Sprintf("legacy/cust-0 seq %d cmd h1 row fence", seqs[0]),
			fmt.Sprintf("legacy/cust-1 seq %d cmd h2 row tip:order-1", seqs[3]),
		}
		if len(got) != len(want) {
			t.Fatalf("held %v, want %v", got, want)
		}
		for i, he := range got {
			if s := fmt.Sprintf("%s/%s seq %d cmd %s row %s", he.Table, he.PK, he.Seq, he.Cmd, he.Key); s != want[i] {
				t.Errorf("held %s, want %s", s, want[i])
			}
		}
		if exited, err := h.ProjectorExited(); exited {
			t.Fatalf("the projector exited: %v", err)
		}
		for _, o := range h.Outcomes(ctx) {
			if strings.HasPrefix(o.ID, "h") {
				t.Errorf("held command %s has an outcome: %s %s", o.ID, o.Status, o.Reason)
			}
		}
		info := consumerInfo(t, ctx, h)
		if info.AckFloor.Stream >= seqs[0] {
			t.Errorf("acknowledged up to seq %d, past the first held command (seq %d)", info.AckFloor.Stream, seqs[0])
		}
	}
	checkHeld(proj)
	projectiontest.WaitFor(t, ctx, "projector status lists both held", func() (bool, error) {
		ov, err := status.Read(ctx, h.JS, status.Config{})
		if err != nil {
			return false, err
		}
		if len(ov.Totals.Held) != 2 {
			return false, nil
		}
		if ov.Totals.BehindCount != 0 {
			t.Errorf("held partitions counted behind: %v", ov.Totals.Behind)
		}
		b := ov.Totals.Held[0]
		if b.Table != "legacy" || b.PK != "cust-0" || b.AppliedSeq != seqs[0] || b.Cmd != "h1" || b.Row != "fence" {
			t.Errorf("status lists %+v, want legacy/cust-0 held at seq %d (h1) by row fence", b, seqs[0])
		}
		return true, nil
	})
	for _, w := range []string{"level=ERROR", "table=legacy", "pk=cust-0", fmt.Sprintf("seq=%d", seqs[0]), "cmd=h1", "row=fence",
		"pk=cust-1", "cmd=h2", "row=tip:order-1", "projector resume"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("the logs lack %q:\n%s", w, logs.String())
		}
	}

	// A restart holds them again: the consumer delivers from its ack
	// floor, the others' fences skip what applied.
	if err := h.StopProjector(); err != nil {
		t.Fatal(err)
	}
	proj = h.StartProjector(projection.Config{Journal: journal.Config{Shards: 1}, Logger: logger})
	projectiontest.WaitFor(t, ctx, "two partitions held after a restart", func() (bool, error) { return proj.Stats().Held.Len() == 2, nil })
	h.PublishAll(ctx, []*events.Command{cmd("b3", "orders", "p2", "z")})
	h.AwaitOutcomes(ctx, []string{"b3"})
	checkHeld(proj)
	if n := proj.Resume("legacy", "cust-0"); n != 1 {
		t.Errorf("Resume asked for %d partitions, want 1", n)
	}
	projectiontest.WaitFor(t, ctx, "the resume tried again", func() (bool, error) {
		return strings.Count(logs.String(), "cmd=h1") >= 3, nil // held, held after the restart, held again
	})
	checkHeld(proj) // the rows are still there

	// The rows dealt with, the held commands apply, once: cust-1 as
	// projector resume asks (its held entry leaves the record), then
	// cust-0 through Resume.
	foreign(store.Delete, "cust-1", "tip:order-1")
	rec, err := lost.Open(ctx, h.JS, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := rec.Remove(ctx, "legacy", "cust-1", 0); err != nil || !ok {
		t.Fatalf("remove the held entry of legacy/cust-1: %v, %v", ok, err)
	}
	h.AwaitOutcomes(ctx, []string{"h2", "h4"})
	projectiontest.WaitFor(t, ctx, "legacy/cust-0 alone held", func() (bool, error) {
		got := proj.Stats().Held.List()
		return len(got) == 1 && got[0].PK == "cust-0", nil
	})
	foreign(store.Delete, "cust-0", "fence")
	if n := proj.Resume("legacy", "cust-0"); n != 1 {
		t.Errorf("Resume asked for %d partitions, want 1", n)
	}
	h.WaitProjected(ctx)
	projectiontest.WaitFor(t, ctx, "nothing held", func() (bool, error) { return proj.Stats().Held.Len() == 0, nil })
	projectiontest.WaitFor(t, ctx, "projector status lists nothing held", func() (bool, error) {
		ov, err := status.Read(ctx, h.JS, status.Config{})
		return err == nil && len(ov.Totals.Held) == 0, err
	})
	head, err := h.Journal.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.WaitFor(t, ctx, "the shard acknowledged everything", func() (bool, error) {
		return consumerInfo(t, ctx, h).AckFloor.Stream == head, nil
	})
	got := h.Outcomes(ctx)
	if uint64(len(got)) != head {
		t.Errorf("%d outcomes for %d commands", len(got), head)
	}
	for seq, o := range got {
		if o.Status != wire.StatusApplied {
			t.Errorf("seq %d (%s): %s %s", seq, o.ID, o.Status, o.Reason)
		}
	}
	// One outcome per command, none twice: the outcomes stream holds as
	// many messages as the journal.
	if last, err := outcomes.NewReader(h.JS).Last(ctx); err != nil || last != head {
		t.Errorf("the outcomes stream ends at %d (%v), the journal at %d", last, err, head)
	}
	m := h.Model(ctx)
	projectiontest.CompareTable(t, st, "legacy", m)
	projectiontest.CompareTable(t, st, "orders", m)
	if err := h.StopProjector(); err != nil {
		t.Fatal(err)
	}
}

// consumerInfo is the state of the projector's consumer of shard 0.
func consumerInfo(t *testing.T, ctx context.Context, h *projectiontest.Harness) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := h.JS.Consumer(ctx, h.Journal.Name(), wire.ConsumerName(wire.DefaultDurable, 0))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}
