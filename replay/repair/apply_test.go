package repair_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestApplyAwaitsItsOwnSequence: Apply returns, for each command, the
// outcome of the journal message it published, not the latest outcome of
// the ID. Here the command's ID was applied before, published raw (so
// JetStream does not deduplicate it): the ID's first outcome says applied,
// and the one of Apply's message says duplicate.
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
	res, err := e.Repair.Apply(e.Ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Publish.Duplicate || res[0].Publish.Seq == ack.Sequence {
		t.Fatalf("publish: %+v; want a new journal message", res)
	}
	if o := res[0].Outcome; o.Seq != res[0].Publish.Seq || o.Status != wire.StatusDuplicate {
		t.Fatalf("outcome %+v; want the duplicate outcome of seq %d", o, res[0].Publish.Seq)
	}
}
