package projection

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// losingConsumer wraps a shard's real consumer: the first delivery of
// stream sequence lose that its pull receives is dropped, as a delivery
// lost in a leader change or on a dropped connection is.
type losingConsumer struct {
	jetstream.Consumer
	lose uint64
	once *sync.Once
}

func (c losingConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	it, err := c.Consumer.Messages(opts...)
	if err != nil {
		return nil, err
	}
	return losingIter{MessagesContext: it, c: c}, nil
}

type losingIter struct {
	jetstream.MessagesContext
	c losingConsumer
}

func (l losingIter) Next(opts ...jetstream.NextOpt) (jetstream.Msg, error) {
	for {
		m, err := l.MessagesContext.Next(opts...)
		if err != nil {
			return nil, err
		}
		dropped := false
		if md, err := m.Metadata(); err == nil && md.Sequence.Stream == l.c.lose {
			l.c.once.Do(func() { dropped = true })
		}
		if !dropped {
			return m, nil
		}
	}
}

// TestTailLoss: a message the shard's consumer delivered never reaches the
// projector, and nothing comes after it to show a gap. The projector
// notices within seconds, not after the five-minute ack wait, and applies
// it.
func TestTailLoss(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := New(ctx, js, st, Config{Journal: journal.Config{Shards: 1}, Shards: []int{0}, NoChangeFeed: true})
	if err != nil {
		t.Fatal(err)
	}
	once := &sync.Once{} // lost once: the consumer recreated delivers it
	p.wrapConsumer = func(c jetstream.Consumer) jetstream.Consumer {
		return losingConsumer{Consumer: c, lose: 2, once: once}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	w := journal.NewWriter(js, journal.DefaultStream)
	start := time.Now()
	for i, id := range []string{"c1", "c2"} {
		c := &events.Command{ID: id, Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "x", Entity: events.Entity{"n": events.Int32(int32(i))}}}}
		if _, err := w.Publish(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for {
		row, err := Reader{Store: st}.Get(ctx, "orders", "p", "x")
		if err == nil && row.Cmd == "c2" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("c2 never applied: row by %q (%v)", row.Cmd, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the table, not synchronising
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the lost delivery was applied after %s, want within seconds", took)
	}
	if p.Stats().LostDeliveries.Load() == 0 {
		t.Error("no lost delivery counted")
	}
}
