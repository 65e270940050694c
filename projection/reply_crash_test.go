package projection_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// noOutcomesJS stores no outcome: the projector crashes, as far as the
// durable record goes, between its reply to a waiting client and the
// stored outcome. Everything else goes to the real server.
type noOutcomesJS struct{ jetstream.JetStream }

var errNoOutcomes = errors.New("outcomes stream unreachable (injected)")

func (n noOutcomesJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if strings.HasPrefix(m.Subject, wire.OutcomesPrefix+".") {
		return nil, errNoOutcomes
	}
	return n.JetStream.PublishMsgAsync(m, opts...)
}

func (n noOutcomesJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if strings.HasPrefix(m.Subject, wire.OutcomesPrefix+".") {
		return nil, errNoOutcomes
	}
	return n.JetStream.PublishMsg(ctx, m, opts...)
}

// TestReplyThenCrash: a projector replies to the waiting client that c2
// applied, then cannot store the outcome and is stopped (a crash for the
// durable record: nothing is acknowledged). The next projector finds c2
// handled in the table and stores its outcome rebuilt from the version
// rows: it must say exactly what the reply said (SPEC §5, "The reply
// before the durable record").
func TestReplyThenCrash(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, time.Minute)
			h := projectiontest.Start(t, b.Open(t), projectiontest.Options{})
			h.StartProjector(projection.Config{})
			h.PublishAll(ctx, []*events.Command{oneRow("c1", events.OpInsert, 1, nil)})
			h.WaitProjected(ctx)
			if err := h.StopProjector(); err != nil {
				t.Fatal(err)
			}

			// The first projector: replies, stores no outcome.
			pctx, stop := context.WithCancel(ctx)
			p1, err := projection.New(pctx, noOutcomesJS{h.JS}, h.Store, projection.Config{Logger: projectiontest.QuietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan error, 1)
			go func() { ran <- p1.Run(pctx) }()

			reader := outcomes.NewReader(h.JS)
			w, err := reader.Watch("c2")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			seq := h.PublishAll(ctx, []*events.Command{oneRow("c2", events.OpMerge, 2, nil)})[0]
			reply, err := w.Await(ctx, seq, false)
			if err != nil {
				t.Fatalf("await the reply: %v", err)
			}
			if reply.Status != wire.StatusApplied || len(reply.Rows) != 1 || reply.Rows[0].Version != 1 {
				t.Fatalf("reply %+v, want c2 applied at version 1", reply)
			}
			if _, err := reader.Latest(ctx, "c2"); !errors.Is(err, journal.ErrNotFound) {
				t.Fatalf("c2's outcome looked up before any was stored: %v, want ErrNotFound", err)
			}
			stop()
			if err := <-ran; err != nil {
				t.Fatalf("the first projector: %v", err)
			}

			// The next projector: c2 is redelivered, found applied, and its
			// outcome stored.
			h.StartProjector(projection.Config{})
			stored, err := reader.Await(ctx, "c2", seq)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(stored, reply) {
				t.Errorf("stored outcome %+v\ndiffers from the reply %+v", stored, reply)
			}
		})
	}
}
