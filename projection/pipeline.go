package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/projection/decide"
)

// The shard's pipeline (SPEC §5, "The next batch before the durable
// record"): once every transaction of a batch has committed and its
// replies are sent, the shard takes its next batch while the first one's
// change events and outcomes are being stored (finish, in the background).
// At most one batch is in that state, the shard's unsettled batch; it is
// acknowledged once its record is stored (settle). What keeps the order of
// docs/ARCHITECTURE.md "Exactly once" across the two:
//
//   - the next batch's look-up takes the unsettled batch's applied outcomes
//     from memory (keepApplied, priorOf), as if they were stored;
//   - a partition's change events wait for the unsettled batch's events of
//     the partition to be stored (afterPrev), so a row's events stay in
//     journal order even when one must be sent again;
//   - acknowledgements stay in journal order, and a batch whose record
//     failed is processed again together with the one after it (redo).

// errPrevFailed: the previous batch's change events of a partition failed
// to store, so this batch's may not be sent; both batches are processed
// again (shardRun.apply).
var errPrevFailed = errors.New("the previous batch's change events were not stored")

// keepApplied keeps the outcome of r, an applied command just replied to
// with digest (its outcome's: computed once, it encodes the command), for
// the next batch's look-up.
func (b *batch) keepApplied(r *Result, digest string) {
	p := decide.Prior{Seq: r.Seq, Status: r.Status, Digest: digest}
	b.appliedMu.Lock()
	defer b.appliedMu.Unlock()
	if b.applied == nil {
		b.applied = make(map[string]decide.Prior)
	}
	b.applied[r.ID] = p
}

// priorOf is the outcome of command id the previous batch applied, if it
// did: it may not be stored yet.
func (b *batch) priorOf(id string) (decide.Prior, bool) {
	if b == nil || b.prev == nil {
		return decide.Prior{}, false
	}
	pb := b.prev
	pb.appliedMu.Lock()
	defer pb.appliedMu.Unlock()
	p, ok := pb.applied[id]
	return p, ok
}

// afterPrev waits until the previous batch's change events of part are
// stored, if it sent any.
func (b *batch) afterPrev(ctx context.Context, part partition) error {
	pb := b.prev
	if pb == nil || !pb.changes.sent(part) {
		return nil
	}
	select {
	case <-pb.changesStored:
	case <-ctx.Done():
		return ctx.Err()
	}
	if pb.changesErr != nil {
		return errPrevFailed
	}
	return nil
}

// processPipelined takes one fetched batch through the exactly-once order
// up to its replies and change events sent, and stores its record
// (finish) in the background: the returned unsettled batch says when.
// prev is the shard's unsettled batch (nil if none). An error is of the
// partitions (batchError); the record of what committed is still stored.
func (p *Projector) processPipelined(ctx context.Context, shard int, msgs []jetstream.Msg, prev *batch) (*unsettledBatch, error) {
	drain, done := drainContext(ctx, p.cfg.DrainTimeout)
	b := p.decode(msgs, prev)
	b.lookup(drain)
	err := batchError(b.applyAll(drain))
	if drain.Err() != nil {
		err = errAbandoned // the record below fails too: nothing is acknowledged
	}
	u := &unsettledBatch{b: b, finished: make(chan struct{})}
	go func() {
		defer close(u.finished)
		defer done()
		if err := b.finish(drain); err != nil {
			u.err = fmt.Errorf("%w: %w", ErrPublish, err)
		}
		if drain.Err() != nil {
			if cause := context.Cause(drain); errors.Is(cause, ErrDrainTimeout) {
				p.log.Warn("stopping: batch abandoned unacknowledged; the shard's next owner processes it again",
					LogShard, shard, "messages", len(msgs), "after", p.cfg.DrainTimeout, "err", u.err)
			}
			u.err = errAbandoned
		}
	}()
	return u, err
}

// unsettledBatch is a processed batch whose record finish is storing.
type unsettledBatch struct {
	b        *batch
	finished chan struct{} // closed when finish returned, with err
	err      error
}

// wait waits for the batch's record and returns finish's error.
func (u *unsettledBatch) wait() error {
	<-u.finished
	return u.err
}

// pending is the shard's batch processed and not acknowledged: its messages
// (todo, the held ones among them) and those processed (run).
type pending struct {
	todo, run []jetstream.Msg
	u         *unsettledBatch // nil when every message was held
}

// batch is p's batch, for the next one's look-up; nil when none.
func (p *pending) batch() *batch {
	if p == nil || p.u == nil {
		return nil
	}
	return p.u.b
}

// finished is closed once p's record is stored (or failed); nil when
// there is nothing to wait for.
func (p *pending) finished() <-chan struct{} {
	if p == nil || p.u == nil {
		return nil
	}
	return p.u.finished
}

// ready reports whether p's record is stored (or failed) already.
func (p *pending) ready() bool {
	select {
	case <-p.finished():
		return true
	default:
		return p != nil && p.u == nil
	}
}

// apply processes todo but for the messages of partitions the shard holds
// (held.go), which it keeps, while the record of the shard's pending batch
// is stored; then it acknowledges that batch, and todo's is pending. When
// a record fails to store, what is not acknowledged is processed again,
// in journal order, the batch after it included (applySync).
func (s *shardRun) apply(ctx context.Context, todo []jetstream.Msg) error {
	if len(todo) == 0 {
		return nil
	}
	next := &pending{todo: todo, run: s.holds.take(todo)}
	var err error
	if len(next.run) > 0 {
		next.u, err = s.p.processPipelined(ctx, s.shard, next.run, s.pending.batch())
		if err == nil {
			s.hold(next.u.b.held, next.run)
		}
	}
	prev := s.pending
	s.pending = nil
	prevErr := s.settle(prev)
	if err == nil && prevErr == nil {
		s.pending = next
		return nil
	}
	var werr error
	if next.u != nil {
		werr = next.u.wait()
	}
	switch {
	case errors.Is(err, errAbandoned), errors.Is(prevErr, errAbandoned), errors.Is(werr, errAbandoned):
		// Not acknowledged: the shard's next run, or next owner, processes
		// them again.
		return nil
	case err != nil && !errors.Is(err, ErrPublish):
		s.stopped(err) // the store failed
		return err
	}
	if prevErr != nil {
		next = &pending{todo: append(slices.Clone(prev.todo), next.todo...), run: append(slices.Clone(prev.run), next.run...)}
	}
	return s.applySync(ctx, next.todo, next.run)
}

// applySync processes run (todo without the held messages) with its record
// stored before it returns, retrying publish failures, then acknowledges
// todo.
func (s *shardRun) applySync(ctx context.Context, todo, run []jetstream.Msg) error {
	if len(run) > 0 {
		held, err := s.p.processRetrying(ctx, s.shard, run)
		if errors.Is(err, errAbandoned) {
			return nil
		}
		if err != nil {
			s.stopped(err)
			return err
		}
		s.hold(held, run)
	}
	s.acked(todo)
	return nil
}

// stopped logs a store failure that stops the shard where it names a row.
func (s *shardRun) stopped(err error) {
	var ae *ApplyError
	if errors.As(err, &ae) {
		s.p.log.Error("cannot apply a row; the shard stops (see README, \"When a shard stops\")",
			LogShard, s.shard, LogTable, ae.Table, LogPK, ae.PK, "rk", ae.RK, "key", ae.StoreKey,
			LogSeq, ae.Seq, LogCmd, ae.Cmd, "err", ae.Err)
	}
}

// settle waits for pb's record and acknowledges pb; an error says its
// record failed to store, and nothing was acknowledged.
func (s *shardRun) settle(pb *pending) error {
	if pb == nil {
		return nil
	}
	if pb.u != nil {
		if err := pb.u.wait(); err != nil {
			return err
		}
		pb.u.b.prev = nil // processed long since: the chain of batches ends here
	}
	s.acked(pb.todo)
	return nil
}

// acked acknowledges todo (ack) and takes its last message as the last
// applied.
func (s *shardRun) acked(todo []jetstream.Msg) {
	s.ack(todo)
	md, _ := todo[len(todo)-1].Metadata()
	s.last = md.Sequence.Stream
	s.p.observeBatch(s.shard, todo)
}

// flush settles the shard's pending batch, processing it again when its
// record failed to store (unless the shard is stopping: then it is left
// unacknowledged); an error stops the shard.
func (s *shardRun) flush(ctx context.Context) error {
	pb := s.pending
	s.pending = nil
	err := s.settle(pb)
	if err == nil || errors.Is(err, errAbandoned) || ctx.Err() != nil {
		return nil
	}
	return s.applySync(ctx, pb.todo, pb.run)
}
