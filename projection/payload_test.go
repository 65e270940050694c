package projection_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// Against a nats-server with its default max_payload (1 MiB) the projector
// refuses to start, before it creates any stream: a valid command of 900 KB
// would be stored, and its change event refused forever.
func TestProjectorRefusesSmallMaxPayload(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	_, js := journaltest.Connect(t, journaltest.StartDefaultServer(t))
	_, err := projection.New(ctx, js, backends()[0].Open(t), projection.Config{Logger: projectiontest.QuietLogger()})
	if !errors.Is(err, journal.ErrMaxPayload) || !strings.Contains(err.Error(), "set max_payload: 8MB") {
		t.Fatalf("New: %v, want ErrMaxPayload with the fix", err)
	}
	if _, err := js.Stream(ctx, wire.JournalStream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the refused projector created the journal: %v", err)
	}
}

// Messages that carry no usable command ID (no Nats-Msg-Id and a body that
// does not decode; an ID far longer than any valid one) are rejected with
// an outcome on outcomes.=, and the partition goes on: such an outcome was
// once published to the invalid subject "outcomes." and the shard stalled.
func TestUnidentifiedMessages(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, time.Minute)
			h := projectiontest.Start(t, b.Open(t), projectiontest.Options{})
			h.StartProjector(projection.Config{})
			for _, id := range []string{"", strings.Repeat("x", 5000)} {
				m := nats.NewMsg(wire.JournalSubject("orders", "p"))
				m.Header.Set("Content-Type", wire.ContentTypeJSON)
				if id != "" {
					m.Header.Set(jetstream.MsgIDHeader, id)
				}
				m.Data = []byte(`{"id":`)
				if _, err := h.JS.PublishMsg(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			h.PublishAll(ctx, []*events.Command{{ID: "after", Table: "orders", PK: "p",
				Ops: []events.RowOp{{Op: events.OpUpsert, RK: "x", Entity: edm.Entity{}}}}})
			h.WaitProjected(ctx)
			got := map[wire.Status]int{}
			for _, o := range h.Outcomes(ctx) {
				got[o.Status]++
				if o.Status == wire.StatusRejected && (len(o.ID) > events.MaxIDLen || o.Reason == "") {
					t.Errorf("rejected outcome %+v: want a bounded ID and a reason", o)
				}
			}
			if got[wire.StatusRejected] != 2 || got[wire.StatusApplied] != 1 {
				t.Fatalf("outcomes %v, want 2 rejected and 1 applied", got)
			}
			s, err := h.JS.Stream(ctx, wire.OutcomesStream)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetLastMsgForSubject(ctx, wire.OutcomeSubject("")); err != nil {
				t.Fatalf("no outcome on %s: %v", wire.OutcomeSubject(""), err)
			}
		})
	}
}

// A projector stopped while its shards open their consumers (SIGTERM just
// after start) stops cleanly: Run returns nil, as for any other stop.
func TestRunStoppedWhileStarting(t *testing.T) {
	h := projectiontest.Start(t, backends()[0].Open(t), projectiontest.Options{})
	p, err := projection.New(journaltest.Context(t, time.Minute), h.JS, h.Store, projection.Config{Logger: projectiontest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run stopped at start: %v, want nil", err)
	}
}
