package projection_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestHandoffForgetsCachedRows: an instance that gets a shard back after
// another instance applied commands to it must not decide on the row state
// it had cached before. (It rejected "ifVersion 1: row is at version 0".)
func TestHandoffForgetsCachedRows(t *testing.T) {
	ctx := journaltest.Context(t, 2*time.Minute)
	h := projectiontest.Start(t, projectiontest.SQLite(t), projectiontest.Options{Journal: journal.Config{Shards: 2}})
	run := func(id string) (*projection.Projector, context.CancelFunc) {
		p, err := projection.New(ctx, h.JS, h.Store, projection.Config{Journal: journal.Config{Shards: 2}, InstanceID: id, LeaseTTL: 2 * time.Second, Logger: projectiontest.QuietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(rctx) }()
		stop := func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
		t.Cleanup(func() { cancel() })
		return p, stop
	}
	await := func(c *events.Command) wire.Outcome {
		t.Helper()
		res, err := h.Writer.Publish(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		o, err := outcomes.NewReader(h.JS).Await(ctx, c.ID, res.Seq)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	owns := func(p *projection.Projector, shard int) func() (bool, error) {
		return func() (bool, error) {
			return slices.Contains(p.OwnedShards(), shard), fmt.Errorf("owns %v", p.OwnedShards())
		}
	}
	op := func(id, pk string, kind events.OpKind, ifVersion *int64) *events.Command {
		return &events.Command{ID: id, Table: "orders", PK: pk, Ops: []events.RowOp{{
			Op: kind, RK: "r", IfVersion: ifVersion, Entity: edm.Entity{"n": edm.String(id)}}}}
	}
	v := func(n int64) *int64 { return &n }

	a, _ := run("a")
	projectiontest.WaitFor(t, ctx, "a owns both shards", func() (bool, error) {
		return len(a.OwnedShards()) == 2, fmt.Errorf("owns %v", a.OwnedShards())
	})
	// A row in shard 1, applied (and cached) by a.
	var pk string
	for i := 0; pk == ""; i++ {
		c := op(fmt.Sprintf("c1-%d", i), fmt.Sprintf("p%d", i), events.OpInsert, nil)
		o := await(c)
		if m, err := h.Journal.Get(ctx, o.Seq); err != nil {
			t.Fatal(err)
		} else if _, shard, _, _ := wire.ParseJournalSubject(m.Subject); shard == 1 {
			pk = c.PK
		}
	}
	// b joins and gets shard 1 by handoff, and changes the row.
	b, stopB := run("b")
	projectiontest.WaitFor(t, ctx, "b owns shard 1", owns(b, 1))
	if o := await(op("c2", pk, events.OpReplace, v(0))); o.Status != wire.StatusApplied {
		t.Fatalf("c2 on b: %s %s", o.Status, o.Reason)
	}
	// b stops; a takes shard 1 back and must see version 1.
	stopB()
	projectiontest.WaitFor(t, ctx, "a owns shard 1 again", owns(a, 1))
	if o := await(op("c3", pk, events.OpReplace, v(1))); o.Status != wire.StatusApplied {
		t.Fatalf("c3 on a after the handoff back: %s (%s); the model applies it", o.Status, o.Reason)
	}
	projectiontest.CompareTable(t, h.Store, "orders", h.Model(ctx))
}
