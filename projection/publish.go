package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// Publishing a fetched batch's outcomes and change events: the batch's
// steps (publishUnwritten, publishApplied, finish; batch.go says when each
// runs), the messages, then the two publishers. Outcomes of commands that
// wrote nothing are published, all at once, and awaited before their
// transaction commits;
// for applied commands the change events are published first and the
// outcomes only once every change event is stored, all before the
// journal messages are acknowledged. So a stored outcome means its change
// events are stored too, and a command redelivered after a crash without
// its outcome gets both rebuilt (recover.go).

// publishUnwritten publishes the outcomes of commands that wrote nothing
// and waits until they are stored (stage 4), before the transaction
// commits: so no later command's effect is durable before their outcome
// is. A command recovered as applied (recover.go) has its change events
// published before its outcome.
func (b *batch) publishUnwritten(ctx context.Context, part partition, rs []Result) error {
	b.p.logResults(part, rs)
	var (
		fs []jetstream.PubAckFuture
		hs []handled
	)
	for i := range rs {
		r := &rs[i]
		if r.Status == Skipped || r.Stored {
			hs = append(hs, handled{status: Skipped}) // handled before
			continue
		}
		msg, h, err := b.publishChanges(ctx, part, r)
		if err != nil {
			return err
		}
		hs = append(hs, h)
		// This outcome's change events are stored before it is sent.
		if err := b.changes.settle(ctx, part); err != nil {
			return err
		}
		f, err := b.outcomes.send(msg)
		if err != nil {
			return fmt.Errorf("outcome of %s: %w", r.ID, err)
		}
		fs = append(fs, f)
	}
	return b.outcomes.await(ctx, fs, hs)
}

// publishApplied replies to the clients waiting for a committed
// transaction's applied commands, keeps their outcomes for the next batch's
// look-up (pipeline.go), publishes their change events (stage 6) once the
// previous batch's events of the partition are stored, and queues their
// outcomes, which finish publishes once every change event is stored.
func (b *batch) publishApplied(ctx context.Context, part partition, rs []Result) error {
	if len(rs) == 0 {
		return nil
	}
	b.p.obs.Transaction(len(rs)) // one committed transaction's commands
	b.p.logResults(part, rs)
	msgs := make([]*nats.Msg, len(rs))
	for i := range rs {
		e := b.bySeq[rs[i].Seq]
		msg, digest, err := outcomeMsg(part.spelled(e), &rs[i], e)
		if err != nil {
			return err
		}
		b.outcomes.reply(rs[i].ID, msg)
		b.keepApplied(&rs[i], digest)
		msgs[i] = msg
	}
	if err := b.afterPrev(ctx, part); err != nil {
		return err
	}
	for i := range rs {
		r := &rs[i]
		e := b.bySeq[r.Seq]
		if err := b.changes.publish(ctx, part, r, e); err != nil {
			return err
		}
		b.outcomes.queue(msgs[i], handled{status: r.Status, at: e.At})
	}
	return nil
}

// publishChanges sends r's change events (asynchronously) and returns its
// outcome, to be sent once they are stored.
func (b *batch) publishChanges(ctx context.Context, part partition, r *Result) (*nats.Msg, handled, error) {
	e := b.bySeq[r.Seq]
	if err := b.changes.publish(ctx, part, r, e); err != nil {
		return nil, handled{}, err
	}
	msg, _, err := outcomeMsg(part.spelled(e), r, e)
	return msg, handled{status: r.Status, at: e.At}, err
}

// finish waits until every change event of the batch is stored, then
// publishes the applied commands' outcomes and waits for them.
func (b *batch) finish(ctx context.Context) error {
	err := b.changes.wait(ctx)
	b.changesErr = err
	if b.changesStored != nil {
		close(b.changesStored)
	}
	if err != nil {
		return err
	}
	return b.outcomes.flush(ctx)
}

func (p *Projector) logResults(part partition, rs []Result) {
	// Asked once: the arguments of a disabled Debug line still cost an
	// allocation each, per applied command.
	debug := p.log.Enabled(context.Background(), slog.LevelDebug)
	for i := range rs {
		r := &rs[i]
		if r.Stored || (r.Status == wire.StatusApplied && !debug) {
			continue // logged when its outcome was published, or not at all
		}
		switch r.Status {
		case wire.StatusRejected:
			p.log.Warn("command rejected", LogSeq, r.Seq, LogTable, part.table, LogPK, part.pk, LogCmd, r.ID, "reason", r.Reason)
		case wire.StatusDuplicate:
			p.log.Info("duplicate command", LogSeq, r.Seq, LogTable, part.table, LogPK, part.pk, LogCmd, r.ID)
		case wire.StatusApplied:
			p.log.Debug("command applied", LogSeq, r.Seq, LogTable, part.table, LogPK, part.pk, LogCmd, r.ID)
		}
	}
}

// outcomeMsg is the outcome message of r, with its command's trace
// context, and the command's digest it carries ("" when none).
func outcomeMsg(part partition, r *Result, e *Entry) (*nats.Msg, string, error) {
	o := wire.Outcome{
		ID: r.ID, Seq: r.Seq, Table: part.table, PK: part.pk,
		Status: r.Status, Reason: r.Reason, Code: r.Code, Rule: r.Rule, Rows: r.Rows, Pruned: r.Pruned, Erased: r.ErasedRows, At: e.At,
	}
	if e.Cmd != nil && (r.Status == wire.StatusApplied || r.Status == wire.StatusDuplicate) {
		// What the ID names, to refuse it with another body later (SPEC §5).
		o.Digest = e.Cmd.Digest()
	}
	msg, err := outcomes.Message(o)
	if err != nil {
		return nil, "", err
	}
	setTrace(e.Trace, msg.Header)
	return msg, o.Digest, nil
}

func changeMsg(part partition, r Result, ch Change, at time.Time) (*nats.Msg, error) {
	ev := wire.ChangeEvent{
		Table: part.table, PK: part.pk, RK: ch.RK, Op: ch.Kind, Version: ch.Version,
		Cmd: r.ID, Seq: r.Seq, At: at, Partition: ch.Partition,
	}
	var err error
	if ch.Before != nil {
		if ev.Before, err = events.MarshalEntityJSON(ch.Before); err != nil {
			return nil, err
		}
	}
	if ch.After != nil {
		if ev.After, err = events.MarshalEntityJSON(ch.After); err != nil {
			return nil, err
		}
	}
	data, err := ev.Encode()
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(wire.ChangeSubject(part.table, part.pk))
	msg.Data = data
	msg.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
	// One event per (command, row version): a republish is deduplicated.
	msg.Header.Set(jetstream.MsgIDHeader, wire.ChangeMsgID(r.Seq, ch.Version, ch.RK))
	return msg, nil
}

// changeFeed publishes the change events of one fetched batch. A nil
// *changeFeed (the change feed is off) publishes nothing.
type changeFeed struct {
	js jetstream.JetStream

	mu       sync.Mutex
	inflight map[partition]*inflight // change events sent, not yet known stored
}

// inflight is one partition's change events sent and not yet known to be
// stored, and the rows they are of. An event whose ack never comes is sent
// again, and then lands after everything sent meanwhile: so a row has at
// most one event in flight, and a second event of a row waits until the
// partition's events in flight are stored (see send). Only the goroutine
// applying the partition uses it until wait.
type inflight struct {
	futures []jetstream.PubAckFuture
	rows    map[string]bool
	// err is the first failure to store one of the partition's events.
	// It sticks: the events that failed are no longer tracked, so from
	// then on nothing says whether the partition's events are stored, and
	// none of its outcomes may be published (they would say a command's
	// events are stored when one is not: recovery trusts a stored outcome
	// and would never publish the event). The batch is processed again.
	err error
}

func newChangeFeed(js jetstream.JetStream) *changeFeed {
	return &changeFeed{js: js, inflight: make(map[partition]*inflight)}
}

// publish sends the change events of an applied result asynchronously.
func (c *changeFeed) publish(ctx context.Context, part partition, r *Result, e *Entry) error {
	if c == nil || r.Status != wire.StatusApplied {
		return nil
	}
	for _, ch := range r.Changes {
		msg, err := changeMsg(part.spelled(e), *r, ch, e.At)
		if err != nil {
			return err
		}
		setTrace(e.Trace, msg.Header)
		if err := c.send(ctx, part, ch.RK, msg); err != nil {
			return fmt.Errorf("change event of %s: %w", r.ID, err)
		}
	}
	return nil
}

// send publishes a change event of row rk asynchronously, first waiting
// for the partition's events in flight if one of them is of the same row:
// events of one row reach the stream in journal order even when one of
// them must be sent again.
func (c *changeFeed) send(ctx context.Context, part partition, rk string, msg *nats.Msg) error {
	fl := c.partition(part)
	if fl.err != nil {
		return fl.err
	}
	if fl.rows[rk] {
		if err := c.settle(ctx, part); err != nil {
			return err
		}
	}
	f, err := c.js.PublishMsgAsync(msg, jetstream.WithStallWait(asyncStallWait))
	if err != nil {
		return err
	}
	fl.futures = append(fl.futures, f)
	fl.rows[rk] = true
	return nil
}

// sent reports whether any change event of part was sent; false on a nil
// *changeFeed.
func (c *changeFeed) sent(part partition) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.inflight[part]
	return ok
}

// partition returns the change events in flight of part.
func (c *changeFeed) partition(part partition) *inflight {
	c.mu.Lock()
	defer c.mu.Unlock()
	fl := c.inflight[part]
	if fl == nil {
		fl = &inflight{rows: make(map[string]bool)}
		c.inflight[part] = fl
	}
	return fl
}

// settle waits until every change event of part in flight is stored; an
// error, once, is the partition's from then on (inflight.err).
func (c *changeFeed) settle(ctx context.Context, part partition) error {
	if c == nil {
		return nil
	}
	fl := c.partition(part)
	if fl.err != nil {
		return fl.err
	}
	fs := fl.futures
	fl.futures = nil
	clear(fl.rows)
	if err := awaitAcks(ctx, c.js, fs); err != nil {
		fl.err = err
		return err
	}
	return nil
}

// wait returns once every change event sent is stored, or an error if one
// of the batch's events failed to store, now or before: then no outcome of
// an applied command of the batch may be published (finish).
func (c *changeFeed) wait(ctx context.Context) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	parts := make([]partition, 0, len(c.inflight))
	for part := range c.inflight {
		parts = append(parts, part)
	}
	c.mu.Unlock()
	var errs []error
	for _, part := range parts {
		if err := c.settle(ctx, part); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// outcomePublisher publishes the outcomes of one fetched batch and reports
// each to the Observer once it is stored.
type outcomePublisher struct {
	js  jetstream.JetStream
	obs Observer

	// noReply: no reply to waiting clients (Config.NoReply).
	noReply bool

	mu      sync.Mutex
	queued  []*nats.Msg // outcomes of applied commands, sent by flush
	handled []handled   // their commands, reported once stored
}

// handled is a command whose outcome is reported to the Observer once it
// is stored.
type handled struct {
	status wire.Status
	at     time.Time // journal time
}

func newOutcomePublisher(js jetstream.JetStream, obs Observer) *outcomePublisher {
	return &outcomePublisher{js: js, obs: obs}
}

// reply tells a client waiting for command id its outcome msg over core
// NATS (wire.ReplySubject), before the outcome is stored: the transaction
// that applied the command has committed, and whatever happens next, the
// outcome stored for it says the same (SPEC §5, "The reply before the
// durable record"). Core NATS delivers at most once; a lost reply costs a
// client only the wait for the stored outcome, so a failure is ignored.
func (o *outcomePublisher) reply(id string, msg *nats.Msg) {
	if o.noReply {
		return
	}
	_ = o.js.Conn().PublishMsg(&nats.Msg{Subject: wire.ReplySubject(id), Header: msg.Header, Data: msg.Data})
}

// send publishes an outcome asynchronously; await waits for it.
func (o *outcomePublisher) send(msg *nats.Msg) (jetstream.PubAckFuture, error) {
	return o.js.PublishMsgAsync(msg, jetstream.WithStallWait(asyncStallWait))
}

// await waits for the outcomes sent, then reports hs.
func (o *outcomePublisher) await(ctx context.Context, fs []jetstream.PubAckFuture, hs []handled) error {
	if err := awaitAcks(ctx, o.js, fs); err != nil {
		return err
	}
	o.report(hs)
	return nil
}

// queue keeps an applied command's outcome for flush.
func (o *outcomePublisher) queue(msg *nats.Msg, h handled) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queued = append(o.queued, msg)
	o.handled = append(o.handled, h)
}

// flush publishes the queued outcomes and waits until they are stored.
func (o *outcomePublisher) flush(ctx context.Context) error {
	o.mu.Lock()
	msgs, hs := o.queued, o.handled
	o.queued, o.handled = nil, nil
	o.mu.Unlock()
	fs := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, msg := range msgs {
		f, err := o.send(msg)
		if err != nil {
			return err
		}
		fs = append(fs, f)
	}
	return o.await(ctx, fs, hs)
}

// report tells the Observer that the outcomes of hs are stored.
func (o *outcomePublisher) report(hs []handled) {
	now := time.Now()
	for _, h := range hs {
		if h.status == Skipped {
			o.obs.Handled(h.status, 0)
			continue
		}
		o.obs.Handled(h.status, now.Sub(h.at))
	}
}

// asyncStallWait is how long a publish waits for room in the connection's
// window of outstanding async publishes (jetstream's PublishAsyncMaxPending,
// 4,000 by default) before failing. Sixteen shards of up to 1,024 commands,
// each with an outcome and change events, fill that window at once under
// load; waiting for acks to free it is the flow control between fetch
// size, shards and the window, where the library's default of 200 ms made
// whole batches fail and be retried with a warning (issue 8, item 9).
const asyncStallWait = 30 * time.Second

// asyncAckTimeout bounds the wait for one asynchronous publish's ack; an
// async publish can be dropped under load, so after it the message is sent
// again synchronously (its Nats-Msg-Id makes that idempotent).
var asyncAckTimeout = 10 * time.Second

// closedChan is always ready.
var closedChan = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// awaitAcks waits for fs. The timeout is for all of them together: acks
// lost in a reconnect are lost together, and waiting for each in turn held
// a shard for ten seconds per message.
func awaitAcks(ctx context.Context, js jetstream.JetStream, fs []jetstream.PubAckFuture) error {
	var errs []error
	expired := time.After(asyncAckTimeout)
	for _, f := range fs {
		var failed error
		select {
		case <-f.Ok():
			continue
		case failed = <-f.Err():
		case <-expired:
			expired = closedChan // every later future without its ack is re-sent at once
			failed = fmt.Errorf("no ack within %v", asyncAckTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := js.PublishMsg(ctx, f.Msg()); err != nil {
			errs = append(errs, fmt.Errorf("publish %s: %w (retry: %w)", f.Msg().Subject, failed, err))
		}
	}
	return errors.Join(errs...)
}
