package journal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

func TestPublishSameIDTwiceIsOneCommand(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "")

	first, err := w.Publish(e.ctx, command("cmd-1", "orders", "customer-42"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.Publish(e.ctx, command("cmd-1", "orders", "customer-42"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !second.Duplicate || second.Seq != first.Seq || second.ID != "cmd-1" {
		t.Fatalf("first %+v, second %+v: want the second a duplicate of the first", first, second)
	}
	if h := e.head(t); h != 1 {
		t.Fatalf("head %d, want 1 message", h)
	}
}

// lossyJS is the real JetStream, except that it loses the acknowledgement
// of the first `lose` publishes that the server did store.
type lossyJS struct {
	jetstream.JetStream
	lose   atomic.Int32
	silent bool // lose async acks by never answering instead of failing
}

func (l *lossyJS) take() bool { return l.lose.Add(-1) >= 0 }

func (l *lossyJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := l.JetStream.PublishMsg(ctx, m, opts...)
	if err == nil && l.take() {
		return nil, fmt.Errorf("lost ack: %w", nats.ErrTimeout)
	}
	return ack, err
}

func (l *lossyJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	paf, err := l.JetStream.PublishMsgAsync(m, opts...)
	if err != nil || !l.take() {
		return paf, err
	}
	select { // let it be stored, then lose the ack
	case <-paf.Ok():
	case err := <-paf.Err():
		return nil, err
	}
	f := &lostFuture{msg: m, errc: make(chan error, 1)}
	if !l.silent {
		f.errc <- jetstream.ErrAsyncPublishTimeout
	}
	return f, nil
}

type lostFuture struct {
	msg  *nats.Msg
	errc chan error
}

func (f *lostFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (f *lostFuture) Err() <-chan error            { return f.errc }
func (f *lostFuture) Msg() *nats.Msg               { return f.msg }

func TestPublishRetryAfterLostAckIsOneCommand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		async  bool
		silent bool
	}{
		{"sync", false, false},
		{"async error", true, false},
		{"async no answer", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, journal.Config{})
			lossy := &lossyJS{JetStream: e.js, silent: tc.silent}
			lossy.lose.Store(1)
			var retries atomic.Int32
			w := journal.NewWriter(lossy, "",
				journal.WithAckTimeout(500*time.Millisecond),
				journal.WithRetryNotify(func(error, time.Duration) { retries.Add(1) }))

			cmd := command("cmd-lost-ack", "orders", "customer-42")
			var res journal.PublishResult
			var err error
			if tc.async {
				var f *journal.Future
				if f, err = w.PublishAsync(e.ctx, cmd); err == nil {
					res, err = f.Result(e.ctx)
				}
			} else {
				res, err = w.Publish(e.ctx, cmd)
			}
			if err != nil {
				t.Fatal(err)
			}
			if retries.Load() != 1 {
				t.Errorf("%d retries, want 1", retries.Load())
			}
			// The retry found the first attempt's message: one command.
			if res.Seq != 1 || !res.Duplicate || res.ID != cmd.ID {
				t.Errorf("result %+v, want seq 1, duplicate", res)
			}
			if h := e.head(t); h != 1 {
				t.Fatalf("head %d, want 1 message", h)
			}
			m, err := e.j.Get(e.ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if id := m.Header.Get("Nats-Msg-Id"); id != cmd.ID {
				t.Errorf("Nats-Msg-Id %q, want %q", id, cmd.ID)
			}
		})
	}
}

func TestPublishRefusesInvalidCommand(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "")

	bad := []*events.Command{
		nil,
		command("", "orders", "pk"),           // no ID
		command("bad id!", "orders", "pk"),    // ID characters
		command("c-1", "1table", "pk"),        // table name
		command("c-2", "orders", "a/b"),       // key character
		{ID: "c-3", Table: "orders", PK: "p"}, // no operations
		{ID: "c-4", Table: "orders", PK: "p", Ops: []events.RowOp{ // a zero Value
			{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"g": {}}}}},
	}
	for _, cmd := range bad {
		if _, err := w.Publish(e.ctx, cmd); !errors.Is(err, rules.ErrInvalid) {
			t.Errorf("Publish(%+v) = %v, want rules.ErrInvalid", cmd, err)
		}
		if _, err := w.PublishAsync(e.ctx, cmd); !errors.Is(err, rules.ErrInvalid) {
			t.Errorf("PublishAsync(%+v) = %v, want rules.ErrInvalid", cmd, err)
		}
	}
	if err := w.Flush(e.ctx); err != nil {
		t.Fatal(err)
	}
	if h := e.head(t); h != 0 {
		t.Fatalf("head %d after invalid commands, want an empty journal", h)
	}
}

func TestPublishAsyncPipelines(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "", journal.WithMaxInFlight(16), journal.WithContentType(wire.ContentTypeJSON))

	const n = 500
	futures := make([]*journal.Future, 0, n)
	for i := range n {
		f, err := w.PublishAsync(e.ctx, command(fmt.Sprintf("async-%d", i), "orders", fmt.Sprintf("pk-%d", i%7)))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	if err := w.Flush(e.ctx); err != nil {
		t.Fatal(err)
	}
	seqs := map[uint64]string{}
	for _, f := range futures {
		select {
		case <-f.Done():
		default:
			t.Fatalf("future %s not done after Flush", f.ID())
		}
		res, err := f.Result(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Duplicate || res.ID != f.ID() || seqs[res.Seq] != "" {
			t.Fatalf("result %+v (seq already %q)", res, seqs[res.Seq])
		}
		seqs[res.Seq] = res.ID
	}
	if h := e.head(t); h != n {
		t.Fatalf("head %d, want %d", h, n)
	}
	// Every stored message carries the ID its future reported.
	if err := e.j.Read(e.ctx, 0, 0, "", func(m journal.Msg) error {
		if got := m.Header.Get("Nats-Msg-Id"); got != seqs[m.Seq] {
			return fmt.Errorf("seq %d has id %q, future said %q", m.Seq, got, seqs[m.Seq])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPublishAsyncConcurrent(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "", journal.WithMaxInFlight(8))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := w.PublishAsync(e.ctx, command(fmt.Sprintf("g%d-%d", g, i), "orders", "pk")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := w.Flush(e.ctx); err != nil {
		t.Fatal(err)
	}
	if h := e.head(t); h != 200 {
		t.Fatalf("head %d, want 200", h)
	}
}

func TestPublishGivesUpWithContext(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "NOSUCHSTREAM", journal.WithAckTimeout(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	defer cancel()
	// The subject is bound to JOURNAL, not to NOSUCHSTREAM: a permanent error.
	if _, err := w.Publish(ctx, command("c-1", "orders", "pk")); err == nil || ctx.Err() != nil {
		t.Fatalf("Publish to the wrong stream = %v (ctx %v), want an immediate error", err, ctx.Err())
	}
	e.srv.Shutdown()
	w = journal.NewWriter(e.js, "", journal.WithAckTimeout(100*time.Millisecond))
	ctx, cancel = context.WithTimeout(e.ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := w.Publish(ctx, command("c-2", "orders", "pk")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish with the server down = %v, want the context's deadline", err)
	}
}

// downJS is a real JetStream connection in front of a server that does not
// answer: async publishes fail at once, and every synchronous retry fails.
// It records the deadline each retry was sent with.
type downJS struct {
	jetstream.JetStream
	mu       sync.Mutex
	attempts map[string][]time.Time
}

func (d *downJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	d.mu.Lock()
	id := m.Header.Get(jetstream.MsgIDHeader)
	// The attempt's deadline, not the clock: a loaded machine can pause
	// the goroutine between the writer's budget check and this line.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Hour)
	}
	d.attempts[id] = append(d.attempts[id], deadline)
	d.mu.Unlock()
	return nil, fmt.Errorf("server away: %w", nats.ErrNoResponders)
}

func (d *downJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	f := &lostFuture{msg: m, errc: make(chan error, 1)}
	f.errc <- jetstream.ErrAsyncPublishTimeout
	return f, nil
}

// TestPublishAsyncRetryBudgetFromFirstSend: failed async publishes are
// retried, but each only within the retry budget counted from its own first
// send, so that no retry can outlive the duplicate window however many
// publishes failed before it. It asserts what the writer promises, not how
// the retries and the clock interleave: every publish fails with
// ErrRetryBudget wrapping its last attempt's error, no attempt is sent with a
// deadline past its budget, each Future resolves once and Flush counts every
// failure.
func TestPublishAsyncRetryBudgetFromFirstSend(t *testing.T) {
	e := newEnv(t, journal.Config{})
	down := &downJS{JetStream: e.js, attempts: map[string][]time.Time{}}
	// Long enough that the writer reaches every failed first attempt
	// within its budget even on a loaded machine, so retries do happen.
	const budget = time.Second
	w := journal.NewWriter(down, "",
		journal.WithAckTimeout(50*time.Millisecond),
		journal.WithRetryBudget(budget),
		journal.WithBackOff(func() backoff.BackOff { return backoff.NewConstantBackOff(20 * time.Millisecond) }))

	const n = 5
	sentBy := map[string]time.Time{}
	var futures []*journal.Future
	for i := range n {
		f, err := w.PublishAsync(e.ctx, command(fmt.Sprintf("down-%d", i), "orders", "pk"))
		if err != nil {
			t.Fatal(err)
		}
		// The first send was before now, so its budget ends no later
		// than now + budget.
		sentBy[f.ID()] = time.Now()
		futures = append(futures, f)
	}
	errs := map[string]error{}
	for _, f := range futures {
		res, err := f.Result(e.ctx)
		if err == nil || res != (journal.PublishResult{}) {
			t.Errorf("%s: result %+v, %v; want a failure", f.ID(), res, err)
		}
		errs[f.ID()] = err
	}
	if err := w.Flush(e.ctx); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d async publishes failed", n)) {
		t.Errorf("Flush: %v, want all %d publishes reported failed", err, n)
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	retried := 0
	for id, sent := range sentBy {
		err := errs[id]
		if !errors.Is(err, journal.ErrRetryBudget) {
			t.Errorf("%s: %v, want %v", id, err, journal.ErrRetryBudget)
		}
		// The last attempt's error: a retry's, or else the async
		// failure of the first send.
		if len(down.attempts[id]) > 0 {
			retried++
			if !errors.Is(err, nats.ErrNoResponders) {
				t.Errorf("%s: %v, want the last retry's %v", id, err, nats.ErrNoResponders)
			}
		} else if !errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
			t.Errorf("%s: %v, want the first send's %v", id, err, jetstream.ErrAsyncPublishTimeout)
		}
		for _, at := range down.attempts[id] {
			if late := at.Sub(sent.Add(budget)); late > 0 {
				t.Errorf("%s retried with a deadline %v after its budget from the first send", id, late)
			}
		}
	}
	if retried == 0 {
		t.Error("no publish was retried within its budget")
	}
	// The server never saw a command: none may be reported stored.
	if h := e.head(t); h != 0 {
		t.Errorf("journal head %d, want 0: nothing was acknowledged", h)
	}
}

// TestPublishRefusesBeyondLimits: a Writer given the limits of Cosmos DB
// for Table refuses a command beyond them by the rule the projector would
// reject it by, publishing nothing; without them the command is published.
func TestPublishRefusesBeyondLimits(t *testing.T) {
	e := newEnv(t, journal.Config{})
	cosmos := journal.NewWriter(e.js, "", journal.WithLimits(events.CosmosLimits))
	cmd := command("c-long", "orders", "pk")
	cmd.Ops[0].RK = strings.Repeat("r", 255-events.RowKeyOverhead+1)
	_, err := cosmos.Publish(e.ctx, cmd)
	var ve *rules.ValidationError
	if !errors.As(err, &ve) || ve.Rule != rules.KeyTooLong {
		t.Fatalf("Publish with Cosmos's limits: %v, want rule %s", err, rules.KeyTooLong)
	}
	if h := e.head(t); h != 0 {
		t.Fatalf("head %d after a refused command", h)
	}
	if _, err := journal.NewWriter(e.js, "").Publish(e.ctx, cmd); err != nil {
		t.Fatalf("Publish without limits: %v", err)
	}
}
