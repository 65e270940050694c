package projection

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
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
	once := &sync.Once{} // lost once: the consumer recreated delivers it
	testLoss(t, func(c jetstream.Consumer) jetstream.Consumer {
		return losingConsumer{Consumer: c, lose: 2, once: once}
	}, "c1", "c2")
}

// testLoss runs a one-shard projector whose consumers wrap wraps, publishes
// upserts of one row with ids, and checks that the last of them is applied
// within seconds and that the projector counted a loss.
func testLoss(t *testing.T, wrap func(jetstream.Consumer) jetstream.Consumer, ids ...string) {
	t.Helper()
	if p := projectIDs(t, wrap, ids...); p.Stats().LostDeliveries.Load() == 0 {
		t.Error("no loss counted")
	}
}

// projectIDs runs a one-shard projector whose consumers wrap wraps,
// publishes upserts of one row with ids, and checks that the last of them
// is applied within seconds (an unexplained loss is called one after
// tailLostAfter, well before the five-minute ack wait).
func projectIDs(t *testing.T, wrap func(jetstream.Consumer) jetstream.Consumer, ids ...string) *Projector {
	t.Helper()
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
	p.wrapConsumer = wrap
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	w := journal.NewWriter(js, wire.JournalStream)
	start := time.Now()
	for i, id := range ids {
		c := &events.Command{ID: id, Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "x", Entity: edm.Entity{"n": edm.Int32(int32(i))}}}}
		if _, err := w.Publish(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	last := ids[len(ids)-1]
	for {
		row, err := rows.Reader{Store: st}.Get(ctx, "orders", "p", "x")
		if err == nil && row.Cmd == last {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never applied: row by %q (%v)", last, row.Cmd, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the table, not synchronising
	}
	if took := time.Since(start); took > 2*tailLostAfter+5*time.Second {
		t.Errorf("%s was applied after %s, want within seconds", last, took)
	}
	return p
}

// delayingConsumer wraps a shard's real consumer: the first delivery of
// stream sequence hold reaches the projector only after delay, as the
// deliveries of a server busy storing a bulk load (an fsync per publish)
// do: the consumer counts them delivered when it queues them.
type delayingConsumer struct {
	jetstream.Consumer
	hold  uint64
	delay time.Duration
	once  *sync.Once
}

func (c delayingConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	it, err := c.Consumer.Messages(opts...)
	if err != nil {
		return nil, err
	}
	return &delayingIter{MessagesContext: it, c: c}, nil
}

type delayingIter struct {
	jetstream.MessagesContext
	c       delayingConsumer
	held    jetstream.Msg
	release time.Time
}

// Next answers as an expired wait (waiting at most a second, the longest
// the projector waits) while it holds the delayed message.
func (d *delayingIter) Next(opts ...jetstream.NextOpt) (jetstream.Msg, error) {
	if d.held != nil {
		if wait := time.Until(d.release); wait > 0 {
			time.Sleep(min(wait, time.Second)) // the delay being injected
			return nil, context.DeadlineExceeded
		}
		m := d.held
		d.held = nil
		return m, nil
	}
	m, err := d.MessagesContext.Next(opts...)
	if err != nil {
		return nil, err
	}
	if md, err := m.Metadata(); err == nil && md.Sequence.Stream == d.c.hold {
		held := false
		d.c.once.Do(func() { held = true })
		if held {
			d.held, d.release = m, time.Now().Add(d.c.delay)
			return nil, context.DeadlineExceeded
		}
	}
	return m, nil
}

// TestSlowDeliveryNotLost: a delivery that reaches the projector seconds
// after the consumer counted it (a loaded server), with nothing after it,
// is applied when it comes; it is not called lost, and the consumer is not
// recreated.
func TestSlowDeliveryNotLost(t *testing.T) {
	once := &sync.Once{}
	p := projectIDs(t, func(c jetstream.Consumer) jetstream.Consumer {
		return delayingConsumer{Consumer: c, hold: 2, delay: tailLostAfter - 2*time.Second, once: once}
	}, "c1", "c2")
	if n := p.Stats().LostDeliveries.Load(); n != 0 {
		t.Errorf("%d losses counted for a delivery that came late", n)
	}
}

// deadPullConsumer wraps a shard's real consumer: the first pull it starts
// never reaches the server, as a pull request lost in a leader change of a
// replicated consumer is; nothing is delivered to it, ever.
type deadPullConsumer struct {
	jetstream.Consumer
	once *sync.Once
}

func (c deadPullConsumer) Messages(opts ...jetstream.PullMessagesOpt) (jetstream.MessagesContext, error) {
	dead := false
	c.once.Do(func() { dead = true })
	if !dead {
		return c.Consumer.Messages(opts...)
	}
	return &deadIter{stopped: make(chan struct{})}, nil
}

// deadIter is a pull with no request at the server: Next never has a
// message. It answers as an expired wait every 100 ms (the options that
// carry the caller's deadline are the library's own).
type deadIter struct {
	stopped chan struct{}
	once    sync.Once
}

func (d *deadIter) Next(...jetstream.NextOpt) (jetstream.Msg, error) {
	select {
	case <-d.stopped:
		return nil, jetstream.ErrMsgIteratorClosed
	case <-time.After(100 * time.Millisecond):
		return nil, context.DeadlineExceeded
	}
}
func (d *deadIter) Stop()  { d.once.Do(func() { close(d.stopped) }) }
func (d *deadIter) Drain() { d.Stop() }

// TestLostPullRequest: the shard's pull request never reaches the server,
// so nothing is delivered while commands wait (no delivery is missing, so
// no gap shows). The projector notices within seconds and pulls again.
func TestLostPullRequest(t *testing.T) {
	once := &sync.Once{}
	testLoss(t, func(c jetstream.Consumer) jetstream.Consumer { return deadPullConsumer{Consumer: c, once: once} }, "c1")
}
