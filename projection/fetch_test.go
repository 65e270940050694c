package projection

import (
	"bytes"
	"errors"
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
)

var errInjected = errors.New("injected pull failure")

// failingRest wraps a real consumer: its pull fails after the first
// message, as a dropped connection would end it mid-batch.
type failingRest struct{ jetstream.Consumer }

func (f failingRest) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	it, err := f.Consumer.Messages(opts...)
	if err != nil {
		return nil, err
	}
	return &failingIter{MessagesContext: it}, nil
}

type failingIter struct {
	jetstream.MessagesContext
	n int
}

func (f *failingIter) Next(opts ...jetstream.NextOpt) (jetstream.Msg, error) {
	if f.n++; f.n > 1 {
		return nil, errInjected
	}
	return f.MessagesContext.Next(opts...)
}

// TestPullReportsRestError: when the pull of the rest of a batch fails, the
// messages that arrived are still returned and the failure is logged, not
// dropped.
func TestPullReportsRestError(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	j, err := journal.Ensure(ctx, js, journal.Config{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter(js, j.Name())
	for i := range 3 {
		c := &events.Command{ID: fmt.Sprintf("c%d", i), Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{}}}}
		if _, err := w.Publish(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateConsumer(ctx, j.Name(), jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	p := &Projector{cfg: Config{FetchBatch: 10, FetchBytes: 1 << 20}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	pl, err := p.newPuller(failingRest{Consumer: cons})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.stop()
	msgs, err := pl.next(ctx, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if len(msgs) != 1 {
		t.Errorf("pull returned %d messages, want the 1 that arrived", len(msgs))
	}
	if !strings.Contains(logs.String(), errInjected.Error()) {
		t.Errorf("the failure of the rest is not reported; log:\n%s", logs.String())
	}
}
