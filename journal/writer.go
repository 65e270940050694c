package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/wire"
)

// publisher is the part of jetstream.JetStream the Writer publishes through.
// A test wraps the real one to inject faults.
type publisher interface {
	PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
	PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error)
}

// Defaults of the Writer's options.
const (
	DefaultMaxInFlight = 4000
	defaultAckTimeout  = 10 * time.Second
	// defaultRetryBudget bounds a publish's retries, counted from its first
	// send. It is shorter than the default duplicate window, so that a
	// retry is always deduplicated against an earlier attempt that was
	// stored but not acknowledged.
	defaultRetryBudget = time.Minute
)

// PublishResult is the acknowledgement of a published command.
type PublishResult struct {
	// ID is the command ID.
	ID string
	// Seq is the command's journal sequence.
	Seq uint64
	// Duplicate is true when the journal already held the ID, so nothing
	// new was stored and Seq is the sequence of the stored command. This is
	// also the case when an earlier attempt of the same call was stored but
	// its acknowledgement was lost.
	Duplicate bool
}

// Writer publishes commands into the journal. It is safe for concurrent
// use.
type Writer struct {
	js          jetstream.JetStream
	pub         publisher
	stream      string
	contentType string
	ackTimeout  time.Duration
	newBackOff  func() backoff.BackOff
	retryBudget time.Duration
	notify      backoff.Notify
	limits      events.Limits
	slots       chan struct{} // one per async publish in flight

	hdrContentType, hdrStream []string // shared header values

	mu         sync.Mutex
	queue      []*Future // in flight, in publish order
	collecting bool      // a goroutine is settling queue
	last       *Future   // most recently queued
	failed     int       // async failures since the last Flush
	firstErr   error

	headers func(context.Context, nats.Header) // WithHeaders
}

// WithHeaders has fn add headers from the publish's context to every
// message published, such as the W3C trace context (traceparent), which
// the projector copies onto the command's outcome and change events. fn
// must not set the headers the Writer sets itself.
func WithHeaders(fn func(ctx context.Context, h nats.Header)) WriterOption {
	return func(w *Writer) { w.headers = fn }
}

// addHeaders runs the WithHeaders hook on msg.
func (w *Writer) addHeaders(ctx context.Context, msg *nats.Msg) {
	if w.headers != nil {
		w.headers(ctx, msg.Header)
	}
}

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithContentType sets the encoding of published commands:
// wire.ContentTypeMsgpack (the default) or wire.ContentTypeJSON.
func WithContentType(ct string) WriterOption {
	return func(w *Writer) { w.contentType = ct }
}

// withBackOff sets the waits between retries: newBackOff is called once per
// publish. The default is exponential from 50 ms up to 2 s. The retries end
// when the policy stops or the retry budget is spent, whichever comes first.
func withBackOff(newBackOff func() backoff.BackOff) WriterOption {
	return func(w *Writer) { w.newBackOff = newBackOff }
}

// WithRetryBudget bounds the retries of one publish, counted from its
// first send (for an async publish, not from when its retries start behind
// others). Keep it within the journal's duplicate window. The default (and
// what d <= 0 means) is one minute.
func WithRetryBudget(d time.Duration) WriterOption {
	return func(w *Writer) {
		if d <= 0 {
			d = defaultRetryBudget
		}
		w.retryBudget = d
	}
}

// WithLimits checks every command against the limits of the table service
// it goes to beyond SPEC §2 (events.CosmosLimits for Cosmos DB for Table;
// see store.Store.Limits), so that a command the projector would reject by
// one of them is refused before it is published, by the same rule. The
// default is none.
func WithLimits(l events.Limits) WriterOption {
	return func(w *Writer) { w.limits = l }
}

// withRetryNotify sets a function called before each retry with the error
// and the wait.
func withRetryNotify(fn backoff.Notify) WriterOption {
	return func(w *Writer) { w.notify = fn }
}

// WithMaxInFlight bounds the number of async publishes awaiting their
// acknowledgement; PublishAsync blocks while it is reached. If n < 1,
// DefaultMaxInFlight.
func WithMaxInFlight(n int) WriterOption {
	return func(w *Writer) {
		if n < 1 {
			n = DefaultMaxInFlight
		}
		w.slots = make(chan struct{}, n)
	}
}

// withAckTimeout sets how long one attempt waits for its acknowledgement
// before it counts as lost and is retried. The default (and what d <= 0
// means) is 10 seconds.
func withAckTimeout(d time.Duration) WriterOption {
	return func(w *Writer) {
		if d <= 0 {
			d = defaultAckTimeout
		}
		w.ackTimeout = d
	}
}

func defaultBackOff() backoff.BackOff {
	return retry.Backoff(50*time.Millisecond, 2*time.Second, 0) // the retry budget bounds it
}

// NewWriter returns a Writer that publishes to the journal stream named
// stream (wire.JournalStream if empty) through js. It needs only publish rights
// on journal.> (and, for Await, on the OUTCOMES stream's consumer API).
func NewWriter(js jetstream.JetStream, stream string, opts ...WriterOption) *Writer {
	if stream == "" {
		stream = wire.JournalStream
	}
	w := &Writer{
		js:          js,
		pub:         js,
		stream:      stream,
		contentType: wire.ContentTypeMsgpack,
		ackTimeout:  defaultAckTimeout,
		newBackOff:  defaultBackOff,
		retryBudget: defaultRetryBudget,
		slots:       make(chan struct{}, DefaultMaxInFlight),
	}
	for _, o := range opts {
		o(w)
	}
	w.hdrContentType = []string{w.contentType}
	w.hdrStream = []string{w.stream}
	return w
}

var hdrSchema = []string{wire.SchemaVersion}

// message validates and encodes cmd. Its errors are permanent.
func (w *Writer) message(cmd *events.Command) (*nats.Msg, error) {
	if cmd == nil {
		return nil, fmt.Errorf("publish: %w: nil command", rules.ErrInvalid)
	}
	if err := w.limits.Validate(cmd); err != nil {
		return nil, fmt.Errorf("publish %s: %w", cmd.ID, err)
	}
	data, err := events.Encode(cmd, w.contentType)
	if err != nil {
		return nil, fmt.Errorf("publish %s: %w", cmd.ID, err)
	}
	// The constant header values are shared by every message: nats.go only
	// reads them.
	h := make(nats.Header, 5)
	h[wire.HeaderContentType] = w.hdrContentType
	h[wire.HeaderSchema] = hdrSchema
	h[jetstream.ExpectedStreamHeader] = w.hdrStream
	h[jetstream.MsgIDHeader] = []string{cmd.ID}
	h[wire.HeaderBodySHA256] = []string{bodyHash(data)}
	msg := &nats.Msg{
		Subject: wire.JournalSubject(cmd.Table, cmd.PK),
		Header:  h,
		Data:    data,
	}
	if err := checkMsgSize(w.js.Conn(), cmd.ID, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// Publish validates cmd, publishes it and waits until the journal stored
// it. An invalid command is refused with an error wrapping rules.ErrInvalid
// and nothing is published. Transient failures (timeouts, a server
// restarting) are retried with the same Nats-Msg-Id until ctx ends or the
// retry budget is spent, so a retry never stores a second command.
func (w *Writer) Publish(ctx context.Context, cmd *events.Command) (PublishResult, error) {
	msg, err := w.message(cmd)
	if err != nil {
		return PublishResult{}, err
	}
	w.addHeaders(ctx, msg)
	return w.publish(ctx, cmd.ID, msg, time.Now(), nil)
}

// publish sends msg synchronously until it is acknowledged, retrying
// transient errors until the retry budget, counted from sent, is spent. A
// non-nil failed is the error of an attempt already made; it counts as the
// first attempt.
func (w *Writer) publish(ctx context.Context, id string, msg *nats.Msg, sent time.Time, failed error) (PublishResult, error) {
	var (
		res  PublishResult
		last = failed
	)
	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, sent.Add(w.retryBudget))
	defer cancel()
	op := func() error {
		if failed != nil {
			err := failed
			failed = nil
			return retryable(ctx, err)
		}
		// The backoff timer and the budget's deadline can fire together, and
		// the timer may win: never send once the budget is spent.
		if err := ctx.Err(); err != nil {
			return backoff.Permanent(err)
		}
		actx, cancel := context.WithTimeout(ctx, w.ackTimeout)
		ack, err := w.pub.PublishMsg(actx, msg)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil {
			if timedOut && !errors.Is(err, ErrAckTimeout) {
				err = fmt.Errorf("%w: %w", ErrAckTimeout, err)
			}
			last = err
			return retryable(ctx, err)
		}
		res = PublishResult{ID: id, Seq: ack.Sequence, Duplicate: ack.Duplicate}
		if ack.Duplicate {
			if err := w.checkDuplicate(ctx, id, msg, ack.Sequence); err != nil {
				return backoff.Permanent(err)
			}
		}
		return nil
	}
	err := backoff.RetryNotify(op, backoff.WithContext(w.newBackOff(), ctx), w.notify)
	if err != nil && parent.Err() == nil && ctx.Err() != nil && last != nil {
		return PublishResult{}, fmt.Errorf("publish %s: %w (%v from the first send), last attempt: %w", id, ErrRetryBudget, w.retryBudget, last)
	}
	if err != nil {
		if last != nil && !errors.Is(err, last) {
			return PublishResult{}, fmt.Errorf("publish %s: %w (last attempt: %w)", id, err, last)
		}
		return PublishResult{}, fmt.Errorf("publish %s: %w", id, err)
	}
	return res, nil
}

// retryable returns err as is if a retry may succeed, and wrapped in
// backoff.Permanent otherwise. Once ctx has ended, its error is the result.
// errCodeMsgIDInProcess is the stream's answer to a message whose
// Nats-Msg-Id is in a proposal not yet stored (409 "duplicate message id is
// in process", nats-server's JSStreamDuplicateMessageConflictErr; nats.go
// names no constant for it). It is this writer's own earlier attempt, sent
// again after a lost ack while a clustered stream's leader changed: the
// next attempt finds it stored (a duplicate, with its sequence) or stores
// it. TestChaos's publisher failed on it as if the stream had refused the
// command.
const errCodeMsgIDInProcess jetstream.ErrorCode = 10158

func retryable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return backoff.Permanent(ctx.Err())
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), // this attempt's ack timeout
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrStaleConnection),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout),
		errors.Is(err, jetstream.ErrTooManyStalledMsgs):
		return err
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.Code == 503 || // JetStream temporarily unavailable
		apiErr.ErrorCode == errCodeMsgIDInProcess) {
		return err
	}
	// The socket failed under a send (a "broken pipe" while the server
	// restarts, before the client notices and starts reconnecting): the
	// client reconnects, and the retry carries the same Nats-Msg-Id.
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) {
		return err
	}
	return backoff.Permanent(err)
}

// Future is the pending result of PublishAsync.
type Future struct {
	id   string
	msg  *nats.Msg
	ctx  context.Context
	sent time.Time

	// The first attempt, sent by PublishAsync and awaited by collect.
	paf     jetstream.PubAckFuture // nil if the send failed
	awaited bool
	ack     *jetstream.PubAck
	err     error

	done chan struct{}
	res  PublishResult
	rerr error
}

// ID returns the command ID.
func (f *Future) ID() string { return f.id }

// Done returns a channel closed once the result is known.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result waits until the command is stored, or failed for good, or ctx
// ends. Ending ctx only stops the wait, not the publish.
func (f *Future) Result(ctx context.Context) (PublishResult, error) {
	select {
	case <-f.done:
		return f.res, f.rerr
	case <-ctx.Done():
		return PublishResult{}, fmt.Errorf("await publish %s: %w", f.id, ctx.Err())
	}
}

// PublishAsync validates cmd and sends it without waiting for the
// acknowledgement; the Future gives the result. An invalid command is
// refused here with an error wrapping rules.ErrInvalid. At most
// WithMaxInFlight publishes are in flight; PublishAsync blocks for a slot
// until ctx ends. ctx also bounds the retries: a send that fails or whose
// acknowledgement is lost is re-sent with the same Nats-Msg-Id, as Publish
// does.
func (w *Writer) PublishAsync(ctx context.Context, cmd *events.Command) (*Future, error) {
	msg, err := w.message(cmd)
	if err != nil {
		return nil, err
	}
	w.addHeaders(ctx, msg)
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("publish %s: %w", cmd.ID, ctx.Err())
	}
	f := &Future{id: cmd.ID, msg: msg, ctx: ctx, done: make(chan struct{}), sent: time.Now()}
	f.paf, f.err = w.pub.PublishMsgAsync(msg)

	w.mu.Lock()
	w.queue = append(w.queue, f)
	w.last = f
	start := !w.collecting
	w.collecting = true
	w.mu.Unlock()
	if start {
		go w.collect()
	}
	return f, nil
}

// Flush waits until every PublishAsync that returned before the call has
// its result, or ctx ends. It reports how many async publishes failed since
// the previous Flush, with the first error; each Future has its own.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	last := w.last
	w.mu.Unlock()
	if last != nil {
		select {
		case <-last.done:
		case <-ctx.Done():
			return fmt.Errorf("flush: %w", ctx.Err())
		}
	}
	w.mu.Lock()
	n, first := w.failed, w.firstErr
	w.failed, w.firstErr = 0, nil
	w.mu.Unlock()
	if n > 0 {
		return fmt.Errorf("flush: %d async publishes failed, the first: %w", n, first)
	}
	return nil
}

// collect settles queued futures in order until the queue is empty. It
// takes them in batches and waits for the newest of a batch first:
// acknowledgements arrive in publish order, so by then the older ones are
// mostly in too, and the goroutine wakes once per batch rather than once per
// message. The failed first attempts of a batch are retried at once, each
// within its own budget, and the batch's futures are resolved in order.
func (w *Writer) collect() {
	timer := time.NewTimer(w.ackTimeout)
	defer timer.Stop()
	maxBatch := max(cap(w.slots)/4, 1)
	batch := make([]*Future, 0, maxBatch)
	for {
		w.mu.Lock()
		n := min(len(w.queue), maxBatch)
		if n == 0 {
			w.collecting = false
			w.mu.Unlock()
			return
		}
		batch = append(batch[:0], w.queue[:n]...)
		clear(w.queue[:n])
		w.queue = w.queue[n:]
		w.mu.Unlock()

		batch[n-1].await(timer, w.ackTimeout)
		var retries sync.WaitGroup
		for _, f := range batch {
			f.await(timer, w.ackTimeout)
			switch {
			case f.ack == nil:
				retries.Go(func() { f.res, f.rerr = w.publish(f.ctx, f.id, f.msg, f.sent, f.err) })
			case f.ack.Duplicate:
				f.res = PublishResult{ID: f.id, Seq: f.ack.Sequence, Duplicate: true}
				retries.Go(func() {
					if err := w.checkDuplicate(f.ctx, f.id, f.msg, f.ack.Sequence); err != nil {
						f.rerr = fmt.Errorf("publish %s: %w", f.id, err)
					}
				})
			default:
				f.res = PublishResult{ID: f.id, Seq: f.ack.Sequence}
			}
		}
		retries.Wait()
		for i, f := range batch {
			f.resolve(w)
			batch[i] = nil
			<-w.slots
		}
	}
}

// await waits for the outcome of f's first attempt. An outcome already in
// wins over the ack timeout and ctx: the goroutine may come to f only after
// both expired (a batch behind a slow one, a loaded machine), and then which
// error f reports must not depend on which ready channel select picks.
func (f *Future) await(timer *time.Timer, ackTimeout time.Duration) {
	if f.awaited {
		return
	}
	f.awaited = true
	if f.paf == nil {
		return // the send failed: f.err says why
	}
	if f.arrived() { // the common case, cheaply: the ack is in
		return
	}
	timer.Reset(time.Until(f.sent.Add(ackTimeout)))
	select {
	case f.ack = <-f.paf.Ok():
	case f.err = <-f.paf.Err():
	case <-timer.C:
		if !f.arrived() {
			f.err = ErrAckTimeout
		}
	case <-f.ctx.Done():
		if !f.arrived() {
			f.err = f.ctx.Err()
		}
	}
}

// arrived takes f's acknowledgement or async error if it is in.
func (f *Future) arrived() bool {
	select {
	case f.ack = <-f.paf.Ok():
		return true
	case f.err = <-f.paf.Err():
		return true
	default:
		return false
	}
}

// resolve publishes f's result.
func (f *Future) resolve(w *Writer) {
	if err := f.rerr; err != nil {
		w.mu.Lock()
		if w.failed == 0 {
			w.firstErr = err
		}
		w.failed++
		w.mu.Unlock()
	}
	close(f.done)
}
