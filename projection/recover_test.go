package projection

import (
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// TestRecoverUsesBatchLookup: the batch's one look-up of its IDs finds the
// own outcomes of redelivered messages, and recovering such a skipped
// command asks NATS nothing more (after a crash, a batch of a thousand
// redelivered rejections made a thousand requests to the stream leader).
func TestRecoverUsesBatchLookup(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	if _, err := outcomes.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	stored := []wire.Outcome{
		{ID: "rejected", Seq: 5, Status: wire.StatusRejected, Reason: "row exists"},
		{ID: "again", Seq: 3, Status: wire.StatusApplied},
		{ID: "again", Seq: 6, Status: wire.StatusDuplicate, Reason: "already applied"},
		{ID: "again", Seq: 9, Status: wire.StatusDuplicate, Reason: "already applied"},
	}
	for _, o := range stored {
		msg, err := outcomes.Message(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	cmd := func(id string) *events.Command {
		return &events.Command{ID: id, Table: "orders", PK: "p", Ops: []events.RowOp{{Op: events.OpDelete, RK: "r"}}}
	}
	part := partition{table: "orders", pk: "p"}
	groups := map[partition][]Entry{part: {
		{Seq: 5, ID: "rejected", Cmd: cmd("rejected")},
		{Seq: 6, ID: "again", Cmd: cmd("again")}, // its latest outcome is a later message's
	}}
	p := &Projector{js: js, stats: &Stats{}}
	if err := p.lookupPriors(ctx, groups); err != nil {
		t.Fatal(err)
	}

	p.js = nil // any request from here on fails the test with a panic
	tests := []struct {
		seq        uint64
		id         string
		wantStatus wire.Status
		wantReason string
	}{
		{5, "rejected", wire.StatusRejected, "row exists"},
		{6, "again", wire.StatusDuplicate, "already applied"},
	}
	for i, tt := range tests {
		r := Result{Seq: tt.seq, ID: tt.id, Status: Skipped}
		rc := recovery{p: p, part: part, r: &r, e: groups[part][i]}
		if err := rc.findOutcome(ctx); err != nil {
			t.Fatal(err)
		}
		if !r.Stored || r.Status != tt.wantStatus || r.Reason != tt.wantReason {
			t.Errorf("seq %d: recovered %+v, want its stored %s outcome (%q)", tt.seq, r, tt.wantStatus, tt.wantReason)
		}
	}
}
