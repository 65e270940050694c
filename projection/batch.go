package projection

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection/decide"
	"github.com/tablejournal/tablejournal/wire"
)

// A fetched batch goes through the exactly-once order of
// docs/ARCHITECTURE.md ("Exactly once"), read top to bottom in this file
// and the files it names, each entered once:
//
//  1. decode and check every message (decode);
//  2. look up the earlier outcomes of its command IDs, once, in the
//     background (lookup), while each partition reads its rows;
//  3. decide each partition's next transaction against the table, once
//     the look-up answered (ready, ready.go: the Ready hook)
//     (Applier.Apply, apply.go, by the transaction's txKind, on the
//     partition's fence and rows, fenced.go; the decision itself is
//     package decide);
//  4. settle commands found handled before a crash (recover, recover.go:
//     crash recovery and its reads, in one file), then publish and await
//     the outcomes of commands that wrote nothing (publishUnwritten,
//     publish.go): the Settle hook, which returns them settled;
//  5. commit the transaction (the txKind's commit, through fenced.go);
//  6. publish the applied commands' change events (publishApplied, the
//     AfterCommit hook), and their outcomes once the change events are
//     stored (finish): publish.go holds every publishing step;
//  7. acknowledge the batch (ack), once its record is stored: the shard
//     processes its next batch meanwhile (pipeline.go).
//
// Partitions go through 3–6 concurrently, each in journal order, each
// through the one driver that replay's rebuild uses too (Applier.Apply);
// stages 4 and 6 are what the projector adds around it.

// ErrPublish wraps a failure to publish outcomes or change events, or to
// look one up: the journal side is unreachable, not the store. The batch is
// safe to process again (the rows' _seq skip what already applied), so the
// projector retries it rather than stopping the shard.
var ErrPublish = errors.New("publish outcomes")

// processRetrying processes one fetched batch. A batch once fetched is
// finished even if ctx is cancelled (drain on shutdown or handoff), unless
// the shard's lease is lost or the drain times out (drainContext). When publishing to
// JetStream fails (a server restart, a network blip) the same batch is
// processed again with backoff: what already applied is skipped by the
// rows' _seq, so the retry is idempotent. A store failure that survived the
// applier's own retries stops the shard: its commands are never skipped.
func (p *Projector) processRetrying(ctx context.Context, shard int, msgs []jetstream.Msg) ([]*HeldError, error) {
	drain, done := drainContext(ctx, p.cfg.DrainTimeout)
	defer done()
	b := journalBackoff()
	for {
		held, err := p.process(drain, msgs)
		if drain.Err() != nil {
			// The lease is lost or the drain timed out: abandoned, not
			// acknowledged, so the next owner processes it again.
			if cause := context.Cause(drain); errors.Is(cause, ErrDrainTimeout) {
				p.log.Warn("stopping: batch abandoned unacknowledged; the shard's next owner processes it again",
					LogShard, shard, "messages", len(msgs), "after", p.cfg.DrainTimeout, "err", err)
			}
			return nil, errAbandoned
		}
		if err == nil || !errors.Is(err, ErrPublish) {
			return held, err
		}
		wait := b.NextBackOff()
		p.log.Warn("publishing outcomes failed; retrying the batch", LogShard, shard, "in", wait, "err", err)
		p.obs.Retry(RetryPublish)
		if retry.Sleep(ctx, wait) != nil {
			// Not acknowledged: redelivered, in order, when the projector restarts.
			return nil, errAbandoned
		}
	}
}

// errAbandoned is a batch left unacknowledged because the shard stops.
var errAbandoned = errors.New("batch abandoned")

// process takes one fetched batch through the exactly-once order, up to
// the acknowledgement, which is the shard's (shardRun.ack): it returns
// the partitions it found held (HeldError), whose entries from the held
// one on were not applied.
func (p *Projector) process(ctx context.Context, msgs []jetstream.Msg) ([]*HeldError, error) {
	b := p.decode(msgs, nil)
	b.lookup(ctx)
	errs := b.applyAll(ctx)
	// Even when a partition failed, the outcomes of what committed before
	// are published: less to rebuild when the batch comes again.
	if err := b.finish(ctx); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrPublish, err))
	}
	if err := batchError(errs); err != nil {
		return nil, err
	}
	return b.held, nil
}

// partition is a partition of the journal, by the table token of its
// subject (wire.TableToken: one table, however its commands spell it) and
// its key. The store is reached by the token (table names are
// case-insensitive there); outcomes and change events name the table as
// each command spells it (spelled).
type partition struct{ table, pk string }

// spelled is part with its table as e's body spells it, when e decoded.
func (part partition) spelled(e *Entry) partition {
	switch {
	case e.Cmd != nil:
		part.table = e.Cmd.Table
	case e.Erase != nil:
		part.table = e.Erase.Table
	}
	return part
}

// batch is one fetched batch of a shard.
type batch struct {
	p    *Projector
	msgs []jetstream.Msg
	// parts are the batch's partitions in the order of their first
	// message; entries their messages in journal order.
	parts   []partition
	entries map[partition][]Entry
	bySeq   map[uint64]*Entry
	// The two publishers: outcomes, and change events (nil with the
	// change feed off).
	outcomes *outcomePublisher
	changes  *changeFeed
	// The outcome look-up (lookup): closed looked, then priors and
	// lookupErr are set.
	looked    chan struct{}
	priors    *priors
	lookupErr error
	// held are the partitions found held (applyAll).
	held []*HeldError
	// The pipeline (pipeline.go): prev is the shard's batch before this
	// one when its durable record was still being stored as this one
	// began; applied the outcomes this batch replied, for the next batch's
	// look-up; changesStored closed once finish knows whether this batch's
	// change events are stored (changesErr).
	prev          *batch
	appliedMu     sync.Mutex
	applied       map[string]decide.Prior
	changesStored chan struct{}
	changesErr    error
}

// decode turns the fetched messages into entries grouped by partition
// (stage 1). A message that does not decode, or is not a valid command,
// becomes an entry carrying its error: it is rejected, never applied.
// prev is the shard's batch whose durable record may still be being
// stored (nil when none is).
func (p *Projector) decode(msgs []jetstream.Msg, prev *batch) *batch {
	b := &batch{p: p, msgs: msgs, entries: make(map[partition][]Entry), bySeq: make(map[uint64]*Entry, len(msgs)),
		outcomes: newOutcomePublisher(p.js, p.obs), prev: prev, changesStored: make(chan struct{})}
	b.outcomes.noReply = p.cfg.NoReply
	if !p.cfg.NoChangeFeed {
		b.changes = newChangeFeed(p.js)
	}
	for _, m := range msgs {
		part, e := p.entry(m)
		if _, ok := b.entries[part]; !ok {
			b.parts = append(b.parts, part)
		}
		b.entries[part] = append(b.entries[part], e)
	}
	for _, es := range b.entries {
		for i := range es {
			b.bySeq[es[i].Seq] = &es[i]
		}
	}
	return b
}

// entry turns a jetstream message into an Entry; see EntryFromMsg.
func (p *Projector) entry(m jetstream.Msg) (partition, Entry) {
	jm := journal.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
	if md, err := m.Metadata(); err == nil {
		jm.Seq, jm.Time = md.Sequence.Stream, md.Timestamp
	}
	table, pk, e := EntryFromMsg(jm)
	// A journal written before the table token was canonical holds a
	// table's commands under its own spelling: the same partition still.
	return partition{wire.TableToken(table), pk}, e
}

// EntryFromMsg turns a journal message into the Entry the projector applies
// and the table and partition key it belongs to. An undecodable or invalid
// message becomes an entry carrying its error (it is rejected, never
// applied); one whose subject does not parse has table "" and the subject
// as pk. The projector and replay's rebuild both decode with it, so that
// they project a journal identically.
func EntryFromMsg(m journal.Msg) (table, pk string, e Entry) {
	e.Seq, e.At = m.Seq, m.Time.UTC()
	e.ID = m.Header.Get(jetstream.MsgIDHeader)
	e.Trace = traceFrom(m.Header)
	table, _, pk, err := wire.ParseJournalSubject(m.Subject)
	if err != nil {
		e.Err = err
		return "", m.Subject, e
	}
	m.Time = e.At
	if journal.IsEraseMsg(m.Header) {
		eraseEntry(m, &e)
		return table, pk, e
	}
	cmd, err := journal.DecodeMsg(m)
	switch {
	case err != nil:
		e.Err = err
	case e.ID != "" && e.ID != cmd.ID:
		e.Err = fmt.Errorf("%w: Nats-Msg-Id %q differs from command id %q", rules.ErrInvalid, e.ID, cmd.ID)
	default:
		e.ID, e.Cmd = cmd.ID, cmd
	}
	return table, pk, e
}

// lookup starts the look-up of the earlier outcomes of the batch's
// command IDs, once for the whole batch (stage 2: a command ID applies at
// most once, ever), in the background: each partition reads its rows from
// the table meanwhile, and waits for the answer (ready) before it decides
// anything. IDs the first-seen filter (ids.go) knows no earlier journal
// message carried are not looked up: they have no earlier outcome.
func (b *batch) lookup(ctx context.Context) {
	b.looked = make(chan struct{})
	if b.p.noOutcomeLookup {
		close(b.looked)
		return
	}
	go func() {
		defer close(b.looked)
		ids := b.p.unseenIDs(ctx, b.entries)
		b.priors, b.lookupErr = b.p.latestOutcomes(ctx, ids)
	}()
}

// unseenIDs are the IDs of groups' entries to look up: lookupIDs but for
// those of messages the first-seen filter knows are the first to carry
// their ID.
func (p *Projector) unseenIDs(ctx context.Context, groups map[partition][]Entry) []string {
	if p.ids == nil {
		return lookupIDs(groups)
	}
	var last uint64
	for _, es := range groups {
		last = max(last, es[len(es)-1].Seq)
	}
	p.ids.reach(ctx, last)
	var ids []string
	var fresh int64
	for _, es := range groups {
		for _, e := range es {
			switch {
			case e.Cmd == nil && e.Erase == nil:
			case p.ids.firstSeen(e.Seq):
				fresh++
			default:
				ids = append(ids, e.ID)
			}
		}
	}
	p.stats.FirstSeen.Add(fresh)
	return ids
}

// lookupIDs are the IDs whose outcomes decide entries: those of commands
// and erases (a message that cannot apply is rejected whatever they say).
func lookupIDs(groups map[partition][]Entry) []string {
	var ids []string
	for _, es := range groups {
		for _, e := range es {
			if e.Cmd != nil || e.Erase != nil {
				ids = append(ids, e.ID)
			}
		}
	}
	return ids
}

// latestOutcomes reads the latest outcome of every ID, in one batched
// request; nil when there are none to read.
func (p *Projector) latestOutcomes(ctx context.Context, ids []string) (*priors, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	p.stats.OutcomeLookups.Add(1)
	// The library's default request timeout (5 s) is short for a loaded
	// server; the batch waits for this answer in any case.
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	latest, err := p.outcomeReader().LatestAll(ctx, ids)
	if err != nil {
		return nil, err
	}
	return &priors{latest: latest, histories: make(map[string][]wire.Outcome)}, nil
}

// lookupPriors sets each entry's Prior from the outcomes stream: the
// latest outcome of every fetched command ID, in one batched request. When
// an ID's latest outcome is of a later journal message (this one is being
// redelivered), the ID's history decides: the newest earlier outcome that
// applied.
func (p *Projector) lookupPriors(ctx context.Context, groups map[partition][]Entry) error {
	pr, err := p.latestOutcomes(ctx, lookupIDs(groups))
	if err != nil {
		return err
	}
	for _, es := range groups {
		if err := p.settlePriors(ctx, pr, es, nil); err != nil {
			return err
		}
	}
	return nil
}

// applyAll takes the batch's partitions through stages 3–6,
// concurrently, up to their change events sent and their applied
// outcomes queued (finish stores them); it returns every partition's
// error.
func (b *batch) applyAll(ctx context.Context) []error {
	// A plain group, not WithContext: a failing partition does not cancel
	// the others, whose outcomes are still published; every error is kept.
	var (
		g    errgroup.Group
		mu   sync.Mutex
		errs []error
	)
	g.SetLimit(b.p.cfg.Concurrency)
	for _, part := range b.parts {
		g.Go(func() error {
			err := b.apply(ctx, part)
			var he *HeldError
			mu.Lock()
			switch {
			case errors.As(err, &he):
				b.held = append(b.held, he)
			case err != nil:
				errs = append(errs, fmt.Errorf("%s/%q: %w", part.table, part.pk, err))
			}
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait() // the goroutines return nil: their errors are in errs
	return errs
}

// batchError is the error of a batch whose partitions failed with errs: a
// store failure outranks publish failures, since it must stop the shard.
func batchError(errs []error) error {
	var storeErrs []error
	for _, err := range errs {
		if !errors.Is(err, ErrPublish) {
			storeErrs = append(storeErrs, err)
		}
	}
	if len(storeErrs) > 0 {
		return errors.Join(storeErrs...)
	}
	return errors.Join(errs...)
}

// apply takes one partition through stages 3–6 with the applier's one
// driver (Applier.Apply): the projector's steps are its hooks, before and
// after each transaction commits.
func (b *batch) apply(ctx context.Context, part partition) error {
	return b.p.applier.Apply(ctx, part.table, part.pk, b.entries[part], Hooks{
		Ready: func(ctx context.Context) error {
			if err := b.ready(ctx, part); err != nil {
				return fmt.Errorf("%w: %w", ErrPublish, err)
			}
			return nil
		},
		Settle: func(ctx context.Context, rs []Result) ([]Result, error) {
			rs, err := b.recover(ctx, part, rs)
			if err != nil {
				return nil, err
			}
			if err := b.publishUnwritten(ctx, part, rs); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrPublish, err)
			}
			for i := range rs {
				rs[i].Stored = true // never acknowledged without it: published and awaited
			}
			return rs, nil
		},
		AfterCommit: func(ctx context.Context, rs []Result) error {
			if err := b.publishApplied(ctx, part, rs); err != nil {
				return fmt.Errorf("%w: %w", ErrPublish, err)
			}
			return nil
		},
	})
}
