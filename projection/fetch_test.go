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
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

var errInjected = errors.New("injected fetch failure")

// failingRest wraps a real consumer: every fetch of more than one message
// (the second fetch of a batch) fails, as the request or as the batch's
// error once its messages are in.
type failingRest struct {
	jetstream.Consumer
	inBatch bool
}

func (f failingRest) Fetch(n int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	if n <= 1 {
		return f.Consumer.Fetch(n, opts...)
	}
	if !f.inBatch {
		return nil, errInjected
	}
	b, err := f.Consumer.Fetch(n, opts...)
	if err != nil {
		return nil, err
	}
	return failingBatch{b}, nil
}

type failingBatch struct{ jetstream.MessageBatch }

func (failingBatch) Error() error { return errInjected }

// TestFetchReportsSecondFetchError: when the fetch of the rest of a batch
// fails, the messages that arrived are still returned and the failure is
// logged, not dropped.
func TestFetchReportsSecondFetchError(t *testing.T) {
	for _, inBatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("inBatch=%v", inBatch), func(t *testing.T) {
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
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: events.Entity{}}}}
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
			msgs, err := p.fetch(ctx, failingRest{Consumer: cons, inBatch: inBatch})
			if err != nil {
				t.Fatalf("fetch: %v", err)
			}
			want := 1
			if inBatch {
				want = 3
			}
			if len(msgs) != want {
				t.Errorf("fetch returned %d messages, want %d", len(msgs), want)
			}
			if !strings.Contains(logs.String(), errInjected.Error()) {
				t.Errorf("the second fetch's failure is not reported; log:\n%s", logs.String())
			}
		})
	}
}
