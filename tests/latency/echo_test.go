package latency_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// echo is the pipeline's floor without a projector: a consumer on its own
// connection, as the projector's shard is, takes each message published to
// latraw.echo.<id> from the raw stream and answers it at once over core
// NATS on latecho.<id>, as the projector replies after its transaction.
// An "echo" request waits for the publish's acknowledgement and then for
// the answer, as Client.Apply waits for its acknowledgement and then the
// reply: Apply's latency less the store's work.
type echo struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func startEcho(tb testing.TB, e *env) *echo {
	tb.Helper()
	ctx := journaltest.Context(tb, time.Minute)
	ec := &echo{waiting: map[string]chan struct{}{}}
	nc, js := journaltest.Connect(tb, e.srv.ClientURL())
	cons, err := js.CreateOrUpdateConsumer(ctx, rawStream, jetstream.ConsumerConfig{Durable: "echo",
		FilterSubject: "latraw.echo.>", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		tb.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		id := strings.TrimPrefix(m.Subject(), "latraw.echo.")
		_ = nc.Publish("latecho."+id, nil)
		_ = m.Ack()
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cc.Stop)
	sub, err := e.nc.Subscribe("latecho.*", func(m *nats.Msg) {
		ec.mu.Lock()
		ch := ec.waiting[strings.TrimPrefix(m.Subject, "latecho.")]
		ec.mu.Unlock()
		if ch != nil {
			close(ch)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return ec
}

// request publishes message id to the echo and waits for its
// acknowledgement and its answer.
func (ec *echo) request(ctx context.Context, js jetstream.JetStream, id string) error {
	ch := make(chan struct{})
	ec.mu.Lock()
	ec.waiting[id] = ch
	ec.mu.Unlock()
	defer func() {
		ec.mu.Lock()
		delete(ec.waiting, id)
		ec.mu.Unlock()
	}()
	msg := &nats.Msg{Subject: "latraw.echo." + id, Data: rawPayload, Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("echo %s: no answer: %w", id, ctx.Err())
	}
}
