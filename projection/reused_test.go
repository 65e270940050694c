package projection_test

import (
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestReusedIDAnotherBody: a command ID published again beyond the
// journal's duplicate window (here: without Nats-Msg-Id, as a plain NATS
// client would) is a duplicate with the same body and rejected
// body-differs with another, wherever its row is (issue 36 item 5); the
// table keeps the first command's effect.
func TestReusedIDAnotherBody(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	h := projectiontest.Start(t, projectiontest.Backends("")[0].Open(t), projectiontest.Options{})
	h.StartProjector(projection.Config{})
	first := oneRow("c1", events.OpUpsert, 1, nil)
	h.PublishAll(ctx, []*events.Command{first})
	h.WaitProjected(ctx)

	same := oneRow("c1", events.OpUpsert, 1, nil)
	same.IssuedAt = time.Now() // when it was issued is not what it does
	other := oneRow("c1", events.OpUpsert, 2, nil)
	other.PK = "elsewhere" // another partition: the rows cannot tell
	for _, tc := range []struct {
		cmd  *events.Command
		want wire.Status
		code wire.Code
	}{{same, wire.StatusDuplicate, ""}, {other, wire.StatusRejected, wire.CodeBodyDiffers}} {
		h.PublishAll(ctx, []*events.Command{tc.cmd})
		h.WaitProjected(ctx)
		var got *wire.Outcome
		for _, o := range h.Outcomes(ctx) {
			if o.ID == "c1" && (got == nil || o.Seq > got.Seq) {
				got = &o
			}
		}
		if got == nil || got.Status != tc.want || got.Code != tc.code {
			t.Errorf("%s/%s again: outcome %+v, want %s %s", tc.cmd.PK, tc.cmd.ID, got, tc.want, tc.code)
		}
	}
}
