package repair_test

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestApplyAwaitsItsOwnSequence: publishing a plan returns, for each
// command, the outcome of the journal message it published, not the
// latest outcome of the ID. Here the command's ID was applied before,
// published raw (so JetStream does not deduplicate it): the ID's first
// outcome says applied, and the one of the plan's message says duplicate.
// The plan is published as Apply publishes it once fresh (repair.Publish):
// Apply itself would find the plan stale, the row having changed.
func TestApplyAwaitsItsOwnSequence(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Backends()[0].Open(t), replaytest.With(replaytest.Repair))
	table := replaytest.UniqueTable("ApplySeq")
	cmd := &events.Command{ID: "plan-x-0", Table: table, PK: "p",
		Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int32(1)}}}}
	data, err := events.MarshalMsgpack(cmd)
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(wire.JournalSubject(cmd.Table, cmd.PK))
	msg.Data = data
	ack, err := e.JS.PublishMsg(e.Ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	if o := e.Await([]string{cmd.ID})[cmd.ID]; o.Status != wire.StatusApplied || o.Seq != ack.Sequence {
		t.Fatalf("first outcome %+v", o)
	}

	p := &repair.Plan{Kind: repair.KindRestore, Table: table, PK: "p", Commands: []*events.Command{cmd}}
	pub, err := repair.Publish(e.Repair, e.Ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub) != 1 || pub[0].Duplicate || pub[0].Seq == ack.Sequence {
		t.Fatalf("publish: %+v; want a new journal message", pub)
	}
	if o := pub[0].Outcome; o.Seq != pub[0].Seq || o.Status != wire.StatusDuplicate {
		t.Fatalf("outcome %+v; want the duplicate outcome of seq %d", o, pub[0].Seq)
	}
}

// TestApplyRefusesAStalePlan: a plan whose rows changed after it was made
// publishes nothing and fails with replay.ErrStale; the plan made again
// applies.
func TestApplyRefusesAStalePlan(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Backends()[0].Open(t), replaytest.With(replaytest.Repair))
	table := replaytest.UniqueTable("Stale")
	cmd := func(id string, n int32) *events.Command {
		return &events.Command{ID: id, Table: table, PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int32(n)}}}}
	}
	seqs := e.Publish([]*events.Command{cmd("c1", 1), cmd("c2", 2)})
	e.Await([]string{"c1", "c2"})
	p, err := e.Repair.PlanRestore(e.Ctx, table, store.InPartition("p"), seqs[0])
	if err != nil || len(p.Commands) != 1 {
		t.Fatalf("plan: %+v %v", p, err)
	}
	e.Publish([]*events.Command{cmd("c3", 3)})
	e.Await([]string{"c3"})
	head, err := e.Src.Journal().Head(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(e.Ctx); !errors.Is(err, replay.ErrStale) {
		t.Fatalf("apply of a stale plan: %v, want ErrStale", err)
	}
	if h, _ := e.Src.Journal().Head(e.Ctx); h != head {
		t.Fatalf("a stale plan published: head %d -> %d", head, h)
	}
	again, err := e.Repair.PlanRestore(e.Ctx, table, store.InPartition("p"), seqs[0])
	if err != nil || again.Preview().Fingerprint == p.Preview().Fingerprint {
		t.Fatalf("plan again: same fingerprint, or %v", err)
	}
	res, err := again.Apply(e.Ctx)
	if err != nil || len(res.Published) != 1 || res.Published[0].Outcome.Status != wire.StatusApplied {
		t.Fatalf("apply of the plan made again: %+v %v", res, err)
	}
}
