package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/ctxtime"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection/shards"
	"github.com/tablejournal/tablejournal/store"
)

// Log keys used by the projector.
const (
	LogSeq   = "seq"
	LogTable = "table"
	LogPK    = "pk"
	LogCmd   = "cmd"
	LogShard = "shard"
)

// Config configures a Projector. The zero value projects every shard of the
// default journal with the change feed on.
type Config struct {
	// Journal names the journal stream. If zero, journal.Config defaults.
	Journal journal.Config
	// Shards lists the shards this instance applies, a static assignment.
	// If nil, the instance shares the journal's shards with the other
	// projectors of the same journal and Durable (package shards), which
	// is all of them when it runs alone.
	Shards []int
	// InstanceID names this instance in the ownership bucket and its logs.
	// If empty, shards.DefaultInstanceID(). Unused with Shards.
	InstanceID string
	// LeaseTTL is how long a shard's lease outlives its owner (see
	// shards.Config). If zero, 5 s. Unused with Shards.
	LeaseTTL time.Duration
	// Replicas is the replica count of every stream and bucket the
	// projector creates (journal, outcomes, change feed, ownership), and
	// the count existing ones must have. If zero, Journal.Replicas; if
	// that is zero too, 1 for new streams and any for existing ones.
	Replicas int
	// Durable prefixes the durable consumer names ("<Durable>-<shard>").
	// If zero, "projector".
	Durable string
	// FetchBatch is the most messages taken from a shard at once. If zero,
	// 1024.
	FetchBatch int
	// FetchBytes bounds the bytes of one fetch after its first message, so
	// a batch of large commands stays small in memory. If zero, 16 MiB.
	FetchBytes int
	// Concurrency bounds the partitions of one shard applied at once. If
	// zero, 16.
	Concurrency int
	// NoChangeFeed turns the change feed off.
	NoChangeFeed bool
	// OutcomesMaxAge and ChangesMaxAge are how long the OUTCOMES and CHANGES
	// streams keep messages. If zero, forever for a new stream, and an
	// existing stream's limit is left as it is; negative removes a limit.
	OutcomesMaxAge, ChangesMaxAge time.Duration
	// Applier configures the versioned apply.
	Applier ApplierConfig
	// Logger receives the projector's logs. If nil, slog.Default().
	Logger *slog.Logger
	// Observer receives what the projector does, for metrics. If nil,
	// nothing does.
	Observer Observer
}

func (c *Config) setDefaults() {
	if c.Durable == "" {
		c.Durable = "projector"
	}
	if c.FetchBatch == 0 {
		c.FetchBatch = 1024
	}
	if c.FetchBytes == 0 {
		c.FetchBytes = 16 << 20
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
}

// Projector applies the journal to a table store continuously.
type Projector struct {
	cfg     Config
	js      jetstream.JetStream
	j       *journal.Journal
	applier *Applier
	store   store.Store
	log     *slog.Logger
	group   *shards.Group // nil with static Config.Shards
	stats   *Stats
	// replicated: the journal has replicas, so pulls avoid byte limits
	// (newPuller).
	replicated bool
	obs        Observer
	idle       idleChecks // observe.go
	// wrapConsumer, when set, wraps each shard consumer the projector
	// pulls from: tests inject lost deliveries with it.
	wrapConsumer func(jetstream.Consumer) jetstream.Consumer
	// noOutcomeLookup skips the outcomes look-up of fetched IDs; only for
	// the benchmark that measures what it costs.
	noOutcomeLookup bool
}

// Stats returns the projector's counters (see Stats), for metrics.
func (p *Projector) Stats() *Stats { return p.stats }

// New prepares a projector: it ensures the journal, outcome and change-feed
// streams exist.
func New(ctx context.Context, js jetstream.JetStream, s store.Store, cfg Config) (*Projector, error) {
	cfg.setDefaults()
	// Refuse before anything is created: with a smaller max_payload a
	// stored command could get an outcome or change event the server
	// refuses, and its shard would stall.
	if err := journal.CheckMaxPayload(js.Conn()); err != nil {
		return nil, err
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = cfg.Journal.Replicas
	}
	cfg.Journal.Replicas = cfg.Replicas
	j, err := journal.Ensure(ctx, js, cfg.Journal)
	if err != nil {
		return nil, err
	}
	logStreamChanges(cfg.Logger, j.Name(), j.Changes())
	_, changes, err := journal.EnsureOutcomesConfig(ctx, js, journal.OutcomesConfig{MaxAge: cfg.OutcomesMaxAge}, journal.WithReplicas(cfg.Replicas))
	if err != nil {
		return nil, err
	}
	logStreamChanges(cfg.Logger, journal.OutcomesStream, changes)
	if !cfg.NoChangeFeed {
		changes, err := EnsureChangeFeed(ctx, js, cfg.ChangesMaxAge, journal.WithReplicas(cfg.Replicas))
		if err != nil {
			return nil, err
		}
		logStreamChanges(cfg.Logger, ChangeStream, changes)
	}
	for _, sh := range cfg.Shards {
		if sh < 0 || sh >= j.Shards() {
			return nil, fmt.Errorf("shard %d out of range: the journal has %d shards", sh, j.Shards())
		}
	}
	stats := cfg.Applier.Stats
	if stats == nil {
		stats = &Stats{}
		cfg.Applier.Stats = stats
	}
	if cfg.Applier.Logger == nil {
		cfg.Applier.Logger = cfg.Logger
	}
	p := &Projector{cfg: cfg, js: js, j: j, store: s, applier: NewApplier(s, cfg.Applier), log: cfg.Logger, stats: stats, obs: cfg.Observer}
	if p.replicated, err = replicatedStream(ctx, js, j.Name()); err != nil {
		return nil, err
	}
	if cfg.Shards == nil {
		if err := p.joinOwners(ctx, cfg.Replicas); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Run projects until ctx is cancelled, then drains the batches in flight and
// returns nil. It returns early with an error when a shard fails
// persistently: that shard's commands are never skipped, so it stops the
// whole projector loudly and a restart resumes at the failed command.
//
// Without static Config.Shards it applies the shards whose leases it holds,
// each until the lease is handed off or lost, and on return it has released
// them all.
func (p *Projector) Run(ctx context.Context) error {
	// Say at once whether the store answers; the shards' own store calls
	// wait out an outage under the same policy meanwhile.
	checkCtx, stopCheck := context.WithCancel(ctx)
	defer stopCheck()
	go func() {
		if err := p.applier.policy.checkStore(checkCtx, p.store); err != nil && checkCtx.Err() == nil {
			p.log.Error("table store check failed", "err", err)
		}
	}()
	if p.group != nil {
		return p.group.Run(ctx, p.runOwnedShard)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, sh := range p.cfg.Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.observedShard(ctx, sh); err != nil {
				p.log.Error("shard stopped", LogShard, sh, "err", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("shard %d: %w", sh, err))
				mu.Unlock()
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *Projector) runShard(ctx context.Context, shard int) error {
	// expect is the consumer delivery sequence of the next message. JetStream
	// numbers every delivery; a gap means deliveries were lost in transit (a
	// server restart, a dropped connection). Those messages would come back
	// only after their ack wait, behind later messages of their partitions,
	// so the shard applies what came before the gap and then recreates its
	// consumer just after the last sequence it applied.
	var (
		cons   jetstream.Consumer
		last   uint64
		expect uint64
		tail   tailWatch
		pl     *puller
	)
	defer func() { pl.stop() }()
	// reopen (re)opens the consumer at stream sequence from (0: its ack
	// floor) with a new pull on it; false when ctx ended.
	reopen := func(from uint64) bool {
		pl.stop()
		pl = nil
		for pl == nil {
			if cons, last = p.reopenConsumer(ctx, shard, from); cons == nil {
				return false
			}
			var err error
			pull := cons
			if p.wrapConsumer != nil {
				pull = p.wrapConsumer(cons)
			}
			if pl, err = p.newPuller(pull); err != nil {
				p.log.Warn("pulling from the consumer failed; recreating it", LogShard, shard, LogSeq, last+1, "err", err)
				p.obs.Retry(RetryFetch)
				from = last + 1
				if ctxtime.Sleep(ctx, time.Second) != nil {
					return false
				}
			}
		}
		expect, tail = 1, newTailWatch(cons)
		return true
	}
	if !reopen(0) {
		return nil
	}
	for ctx.Err() == nil {
		msgs, err := pl.next(ctx, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
				p.log.Warn("consumer gone; recreating it", LogShard, shard, LogSeq, last+1, "err", err)
			} else {
				p.log.Warn("pulling failed; recreating the consumer", LogShard, shard, LogSeq, last+1, "err", err)
				p.obs.Retry(RetryFetch)
			}
			if !reopen(last + 1) {
				return nil
			}
			continue
		}
		p.observeFetch(ctx, shard, cons, msgs)
		why := ""
		if len(msgs) == 0 && tail.due() {
			// Idle: were deliveries lost at the tail, with nothing after
			// them to show a gap?
			st, err := tail.check(ctx, cons, expect-1)
			switch {
			case err != nil:
				if ctx.Err() == nil {
					p.log.Debug("checking the consumer failed", LogShard, shard, "err", err)
				}
			case st.replaced:
				why = "the consumer was replaced"
			case st.beyond > 0 || st.waiting > 0:
				// Delivered and not taken yet, or a pull request on its
				// way: wait a moment for them.
				if msgs, err = pl.next(ctx, tailGrace); err == nil && len(msgs) == 0 {
					why = fmt.Sprintf("%d deliveries never arrived", st.beyond)
					if st.beyond == 0 {
						why = fmt.Sprintf("%d messages wait and no pull request reached the server", st.waiting)
					}
				}
			}
		}
		var todo []jetstream.Msg
		gap := false
		for _, m := range msgs {
			md, err := m.Metadata()
			if err != nil || md.Sequence.Consumer != expect {
				// Unreadable metadata (not a JetStream delivery) is treated
				// as a gap too: skipping the message would let the
				// cumulative ack of a later one acknowledge it unapplied.
				gap = true
				break
			}
			expect++
			if md.Sequence.Stream <= last {
				_ = m.Ack() // a redelivery of a message already applied
				continue
			}
			todo = append(todo, m)
		}
		if len(todo) > 0 {
			if err := p.processRetrying(ctx, shard, todo); err != nil {
				var ae *ApplyError
				if errors.As(err, &ae) {
					p.log.Error("cannot apply a row; the shard stops (see README, \"When a shard stops\")",
						LogShard, shard, LogTable, ae.Table, LogPK, ae.PK, "rk", ae.RK, "key", ae.StoreKey,
						LogSeq, ae.Seq, LogCmd, ae.Cmd, "err", ae.Err)
				}
				return err
			}
			md, _ := todo[len(todo)-1].Metadata()
			last = md.Sequence.Stream
			p.observeBatch(shard, todo)
		}
		if gap {
			why = "a gap in the delivery sequence"
		}
		if why != "" && ctx.Err() == nil {
			p.stats.LostDeliveries.Add(1)
			p.log.Warn("deliveries lost; resuming in journal order", LogShard, shard, LogSeq, last+1, "why", why)
			p.obs.Retry(RetryDeliveryGap)
			if !reopen(last + 1) {
				return nil
			}
		}
	}
	return nil
}

// reopenConsumer recreates the shard's consumer at stream sequence from,
// retrying with backoff while JetStream is unavailable (a gap usually comes
// from a server restart, and the server may still be starting). It returns
// a nil consumer only when ctx ends.
func (p *Projector) reopenConsumer(ctx context.Context, shard int, from uint64) (jetstream.Consumer, uint64) {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, 5*time.Second, 0
	for {
		cons, last, err := p.openConsumer(ctx, shard, from)
		if err == nil {
			return cons, last
		}
		if ctx.Err() != nil {
			return nil, 0
		}
		wait := b.NextBackOff()
		p.log.Warn("recreating the consumer failed; retrying", LogShard, shard, LogSeq, from, "in", wait, "err", err)
		p.obs.Retry(RetryConsumer)
		select {
		case <-ctx.Done():
			return nil, 0
		case <-time.After(wait):
		}
	}
}

// processRetrying processes one fetched batch. A batch once fetched is
// finished even if ctx is cancelled (drain on shutdown or handoff), unless
// the shard's lease is lost (drainContext). When publishing to
// JetStream fails (a server restart, a network blip) the same batch is
// processed again with backoff: what already applied is skipped by the
// rows' _seq, so the retry is idempotent. A store failure that survived the
// applier's own retries stops the shard: its commands are never skipped.
func (p *Projector) processRetrying(ctx context.Context, shard int, msgs []jetstream.Msg) error {
	drain, done := drainContext(ctx)
	defer done()
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, 5*time.Second, 0
	for {
		err := p.process(drain, msgs)
		if drain.Err() != nil {
			return nil // the lease is lost: abandoned, not acknowledged
		}
		if err == nil || !errors.Is(err, ErrPublish) {
			return err
		}
		wait := b.NextBackOff()
		p.log.Warn("publishing outcomes failed; retrying the batch", LogShard, shard, "in", wait, "err", err)
		p.obs.Retry(RetryPublish)
		select {
		case <-ctx.Done():
			// Not acknowledged: redelivered, in order, when the projector restarts.
			return nil
		case <-time.After(wait):
		}
	}
}

// openConsumer resets (or creates) the shard's durable consumer so that it
// delivers in journal order from stream sequence from, or, when from is 0,
// from its ack floor, with delivery sequence 1. It returns the consumer and
// the sequence before the first it will deliver. Only the shard's owner
// does so (ownerMetadata).
//
// A durable consumer left by a crashed projector still holds that process's
// unacknowledged messages, and would redeliver them only when their ack wait
// expires — after delivering later messages of the same partitions to the
// new process. A partition's commands must apply strictly in order (and a
// command seen after a later one of its rows looks already applied), so the
// consumer is reset to start at the first message not contiguously
// acknowledged. Messages after it that were acknowledged come again and are
// skipped by the rows' _seq. The reset (JetStream's consumer reset, which
// forgets pending deliveries) keeps the consumer and, on a cluster, its
// replica group; where the server has no reset, the consumer is deleted and
// created again.
func (p *Projector) openConsumer(ctx context.Context, shard int, from uint64) (jetstream.Consumer, uint64, error) {
	name := fmt.Sprintf("%s-%d", p.cfg.Durable, shard)
	cfg := jetstream.ConsumerConfig{
		Durable:       name,
		FilterSubject: journal.ShardFilter(shard),
		AckPolicy:     jetstream.AckAllPolicy, // one ack per batch
		AckWait:       5 * time.Minute,
		MaxAckPending: p.maxAckPending(),
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	old, err := p.js.Consumer(ctx, p.j.Name(), name)
	switch {
	case err == nil:
		info, err := old.Info(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("consumer %s: %w", name, err)
		}
		if cfg.Metadata, err = p.ownerMetadata(ctx, shard, info); err != nil {
			return nil, 0, err
		}
		if from == 0 {
			from = info.AckFloor.Stream + 1
		}
		if info.Config.MaxAckPending != cfg.MaxAckPending {
			// Made by an earlier version: the pull's buffer relies on it
			// (newPuller).
			up := info.Config
			up.MaxAckPending = cfg.MaxAckPending
			if _, err := p.js.UpdateConsumer(ctx, p.j.Name(), up); err != nil {
				return nil, 0, fmt.Errorf("consumer %s: %w", name, err)
			}
		}
		p.log.Info("resuming shard", LogShard, shard, LogSeq, from)
		if r, err := p.js.ResetConsumerToSequence(ctx, p.j.Name(), name, from); err == nil {
			p.observeReset(shard, r, from-1)
			return old, from - 1, nil
		} else if errors.Is(err, jetstream.ErrConsumerNotFound) {
			break
		} else {
			p.log.Debug("resetting the consumer failed; recreating it", LogShard, shard, "err", err)
		}
		if err := p.js.DeleteConsumer(ctx, p.j.Name(), name); err != nil {
			return nil, 0, fmt.Errorf("consumer %s: %w", name, err)
		}
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, 0, fmt.Errorf("consumer %s: %w", name, err)
	default:
		if cfg.Metadata, err = p.ownerMetadata(ctx, shard, nil); err != nil {
			return nil, 0, err
		}
	}
	if from > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = from
	}
	cons, err := p.js.CreateConsumer(ctx, p.j.Name(), cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("consumer %s: %w", name, err)
	}
	if from == 0 {
		from = 1
	}
	p.observeOpen(shard, cons, from-1)
	return cons, from - 1, nil
}

// ErrPublish wraps a failure to publish outcomes or change events, or to
// look one up: the journal side is unreachable, not the store. The batch is
// safe to process again (the rows' _seq skip what already applied), so the
// projector retries it rather than stopping the shard.
var ErrPublish = errors.New("publish outcomes")

type partition struct{ table, pk string }

// process applies one fetched batch: partitions concurrently, each in
// journal order; outcomes and changes are published before any message is
// acknowledged.
func (p *Projector) process(ctx context.Context, msgs []jetstream.Msg) error {
	groups := make(map[partition][]Entry)
	var order []partition
	for _, m := range msgs {
		part, e := p.entry(m)
		if _, ok := groups[part]; !ok {
			order = append(order, part)
		}
		groups[part] = append(groups[part], e)
	}
	// A command ID applies at most once, ever: one batched look-up of the
	// IDs' earlier outcomes per fetch.
	if !p.noOutcomeLookup {
		if err := p.lookupPriors(ctx, groups); err != nil {
			return fmt.Errorf("%w: %w", ErrPublish, err)
		}
	}
	pub := newPublisher(p.js, !p.cfg.NoChangeFeed, p.obs)
	// A plain group, not WithContext: a failing partition does not cancel
	// the others, whose outcomes are still published; every error is kept.
	var (
		g    errgroup.Group
		mu   sync.Mutex
		errs []error
	)
	g.SetLimit(p.cfg.Concurrency)
	for _, part := range order {
		g.Go(func() error {
			err := p.applier.Apply(ctx, part.table, part.pk, groups[part], Hooks{
				BeforeCommit: func(ctx context.Context, rs []Result) error {
					for i := range rs {
						if rs[i].Status == Skipped && !rs[i].Stored {
							if err := p.recoverOutcome(ctx, part, &rs[i], groups[part]); err != nil {
								return err
							}
						}
					}
					p.logResults(part, rs)
					// Rejections must be durable before a later command's effect is.
					if err := pub.publishResults(ctx, part, rs, groups[part], true); err != nil {
						return fmt.Errorf("%w: %w", ErrPublish, err)
					}
					for i := range rs {
						rs[i].Stored = true // never acknowledged without it: published and awaited
					}
					return nil
				},
				AfterCommit: func(ctx context.Context, rs []Result) error {
					p.logResults(part, rs)
					if err := pub.publishResults(ctx, part, rs, groups[part], false); err != nil {
						return fmt.Errorf("%w: %w", ErrPublish, err)
					}
					return nil
				},
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s/%q: %w", part.table, part.pk, err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines return nil: their errors are in errs
	// Even when a partition failed, the outcomes of what committed before
	// are published: less to rebuild when the batch comes again.
	if err := pub.wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrPublish, err))
	}
	// A store failure outranks publish failures: it must stop the shard.
	var storeErrs []error
	for _, err := range errs {
		if !errors.Is(err, ErrPublish) {
			storeErrs = append(storeErrs, err)
		}
	}
	if len(storeErrs) > 0 {
		return errors.Join(storeErrs...)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// The consumer acknowledges cumulatively: the last message of the batch
	// stands for all. A lost ack means a redelivery, which the rows' _seq skip.
	_ = msgs[len(msgs)-1].Ack()
	return nil
}

// entry turns a jetstream message into an Entry; see EntryFromMsg.
func (p *Projector) entry(m jetstream.Msg) (partition, Entry) {
	jm := journal.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
	if md, err := m.Metadata(); err == nil {
		jm.Seq, jm.Time = md.Sequence.Stream, md.Timestamp
	}
	table, pk, e := EntryFromMsg(jm)
	return partition{table, pk}, e
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
	table, _, pk, err := journal.ParseSubject(m.Subject)
	if err != nil {
		e.Err = err
		return "", m.Subject, e
	}
	m.Time = e.At
	cmd, err := journal.DecodeMsg(m)
	switch {
	case err != nil:
		e.Err = err
	case e.ID != "" && e.ID != cmd.ID:
		e.Err = fmt.Errorf("%w: Nats-Msg-Id %q differs from command id %q", events.ErrInvalid, e.ID, cmd.ID)
	default:
		e.ID, e.Cmd = cmd.ID, cmd
	}
	return table, pk, e
}

func (p *Projector) logResults(part partition, rs []Result) {
	for _, r := range rs {
		if r.Stored {
			continue // logged when its outcome was published
		}
		switch r.Status {
		case journal.StatusRejected:
			p.log.Warn("command rejected", LogSeq, r.Seq, LogTable, part.table, LogPK, part.pk, LogCmd, r.ID, "reason", r.Reason)
		case journal.StatusDuplicate:
			p.log.Info("duplicate command", LogSeq, r.Seq, LogTable, part.table, LogPK, part.pk, LogCmd, r.ID)
		case journal.StatusApplied:
			p.log.Debug("command applied", LogSeq, r.Seq, LogTable, part.table, LogPK, part.pk, LogCmd, r.ID)
		}
	}
}

// recoverOutcome settles a redelivered command whose effect is already in
// the table and whose outcome is not known to be stored: it sets r's
// Status (and Rows, Changes) to the outcome to publish, or marks it Stored.
// It never leaves r without an outcome.
//
// If the projector crashed between a commit and publishing the outcomes,
// the outcome of an applied command is rebuilt from the version rows that
// carry its sequence. A command that wrote nothing had its outcome
// published before any later commit (BeforeCommit), so it is found in the
// outcomes stream. If it is not, the table (or the outcomes stream) lost
// what the projector wrote: that is logged at ERROR and counted, and the
// outcome is rebuilt from the rows' history as they stood before the
// command.
func (p *Projector) recoverOutcome(ctx context.Context, part partition, r *Result, entries []Entry) error {
	var e Entry
	for _, x := range entries {
		if x.Seq == r.Seq {
			e = x
		}
	}
	if e.own != nil {
		// The batch's look-up found it.
		r.Status, r.Reason, r.Stored = e.own.Status, e.own.Reason, true
		return nil
	}
	o, err := journal.NewOutcomes(p.js).Latest(ctx, r.ID)
	switch {
	case err == nil && o.Seq == r.Seq:
		r.Status, r.Reason, r.Stored = o.Status, o.Reason, true
		return nil
	case err == nil:
		// The ID has outcomes of other messages (the latest in the stream
		// is not necessarily the newest in the journal: rejections and
		// duplicates are published before the applied outcomes of their
		// batch): look through all of them.
		all, err := journal.ScanOutcomes(ctx, p.js, r.ID)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrPublish, err)
		}
		for _, o := range all {
			if o.Seq == r.Seq {
				r.Status, r.Reason, r.Stored = o.Status, o.Reason, true
				return nil
			}
		}
	case err != nil && !errors.Is(err, journal.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrPublish, err)
	}
	if e.Cmd == nil {
		// Only valid commands can be skipped; an invalid one is rejected
		// again on the message alone.
		r.reject(fmt.Sprint(e.Err), e.Err)
		return nil
	}
	rows, err := retryStore(ctx, p.applier.policy, "read versions of "+part.table, func() ([]journal.RowVersion, error) {
		return versionsBySeq(ctx, p.store, part.table, part.pk, e.Cmd, r.Seq)
	})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return p.outcomeFromHistory(ctx, part, r, e)
	}
	r.Status, r.Rows = journal.StatusApplied, rows
	if p.cfg.NoChangeFeed {
		return nil
	}
	// The events are rebuilt and published again: one already stored is
	// deduplicated by its Nats-Msg-Id, as long as it was stored within the
	// stream's duplicate window, which a command journaled less than
	// changeRepublishAge ago is sure of. An older command's events are
	// taken as stored when the partition's newest event is of a later
	// command: events are sent in journal order per row, and only one
	// lost in flight (then re-sent) could be missing — and that is
	// settled long before such an age.
	if time.Since(e.At) > changeRepublishAge {
		last, err := lastChangeSeq(ctx, p.js, part)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrPublish, err)
		}
		if last > r.Seq {
			return nil
		}
	}
	r.Changes, err = retryStore(ctx, p.applier.policy, "read versions of "+part.table, func() ([]Change, error) {
		return changesOf(ctx, p.store, part.table, part.pk, r.Seq, rows)
	})
	if err != nil {
		p.applier.disagree(part.table, part.pk, fmt.Sprintf("a version before those of seq %d (command %s) is missing", r.Seq, r.ID), err)
		r.Changes = nil
	}
	return nil
}

// outcomeFromHistory settles a skipped command that has neither an outcome
// nor a version in the table, which the projector never leaves behind: it
// evaluates the command again on its rows as they stood just before it, as
// the version rows tell. If that says the command applied, the table lost
// its effect, and the outcome says so as a rejection (nothing of it is in
// the table).
func (p *Projector) outcomeFromHistory(ctx context.Context, part partition, r *Result, e Entry) error {
	state := make(map[string]*rowState)
	for _, rk := range touchedRKs([]Entry{e}) {
		s, err := retryStore(ctx, p.applier.policy, "read history of "+part.table, func() (*rowState, error) {
			return stateBefore(ctx, p.store, part.table, part.pk, rk, e.Seq)
		})
		if err != nil {
			return err
		}
		state[rk] = s
	}
	b := newBatch(part.pk, state, p.store.Limits())
	if err := b.add(e); err != nil {
		return err
	}
	res := b.results[0]
	if res.Status == journal.StatusApplied && len(res.Rows) == 0 {
		// It applied and changed nothing (it inserted and deleted a row):
		// no version to find, and its outcome is published after the
		// commit of its batch, so a crash may lose it. Nothing disagrees.
		*r = res
		return nil
	}
	if res.Status == journal.StatusApplied {
		res = Result{Seq: e.Seq, ID: e.ID, Status: journal.StatusRejected, Code: journal.CodeLostWrite,
			Reason: "not in the table: the rows moved on past this command, but no version carries it (the store lost a confirmed write?)"}
	}
	p.applier.disagree(part.table, part.pk,
		fmt.Sprintf("seq %d (command %s) was handled but has no outcome and no version; outcome rebuilt from the rows' history: %s", e.Seq, e.ID, res.Status),
		errors.New("outcome missing"))
	*r = res
	return nil
}

// stateBefore reads the state of a row just before journal sequence seq
// from its tip and history.
func stateBefore(ctx context.Context, s store.Store, table, pk, rk string, seq uint64) (*rowState, error) {
	var newest *Row
	if tip, err := (Reader{Store: s}).Get(ctx, table, pk, rk); err == nil && tip.Seq < seq {
		newest = &tip
	} else if err != nil && !errors.Is(err, ErrRowNotFound) {
		return nil, err
	}
	if newest == nil && seq > 0 {
		// Version rows are keyed by sequence: the newest before seq is the
		// first row at or after the key of seq-1, read without a scan.
		r, ok, err := VersionAt(ctx, s, table, pk, rk, seq-1)
		if err != nil && !errors.Is(err, store.ErrTableNotFound) {
			return nil, err
		}
		if ok {
			newest = &r
		}
	}
	if newest == nil {
		return &rowState{}, nil
	}
	if newest.Deleted {
		return &rowState{latest: newest}, nil
	}
	t := *newest
	t.Tip, t.ETag = true, ""
	return &rowState{tip: &t, latest: &t}, nil
}

// lookupPriors sets each entry's Prior from the outcomes stream: the
// latest outcome of every fetched command ID, in one batched request. When
// an ID's latest outcome is of a later journal message (this one is being
// redelivered), the ID's history decides: the newest earlier outcome that
// applied.
func (p *Projector) lookupPriors(ctx context.Context, groups map[partition][]Entry) error {
	var ids []string
	for _, es := range groups {
		for _, e := range es {
			if e.Cmd != nil {
				ids = append(ids, e.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	p.stats.OutcomeLookups.Add(1)
	// The library's default request timeout (5 s) is short for a loaded
	// server; the batch waits for this answer in any case.
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	latest, err := journal.LatestOutcomes(ctx, p.js, ids)
	if err != nil {
		return err
	}
	histories := make(map[string][]journal.Outcome)
	for _, es := range groups {
		for i := range es {
			e := &es[i]
			o, ok := latest[e.ID]
			if !ok || e.Cmd == nil {
				continue
			}
			if o.Seq < e.Seq {
				e.Prior = Prior{Seq: o.Seq, Status: o.Status}
				continue
			}
			if o.Seq == e.Seq && o.Status != journal.StatusDuplicate {
				// Its own outcome (a redelivery): it applied or was
				// rejected, so no earlier message with its ID applied.
				e.own = &o
				continue
			}
			all, ok := histories[e.ID]
			if !ok {
				if all, err = journal.ScanOutcomes(ctx, p.js, e.ID); err != nil {
					return err
				}
				histories[e.ID] = all
			}
			e.Prior = priorFrom(all, e.Seq)
			for i := range all {
				if all[i].Seq == e.Seq {
					e.own = &all[i]
				}
			}
		}
	}
	return nil
}

// changeRepublishAge is how old (by journal time) a recovered command may
// be for its change events to be published again without looking: well
// inside the change stream's 2-minute duplicate window.
const changeRepublishAge = 90 * time.Second

// lookupTimeout bounds the outcomes look-up of one fetched batch.
const lookupTimeout = 30 * time.Second

// priorFrom picks from an ID's outcomes the one that decides the message at
// seq: the newest earlier one that applied or was a duplicate, else none.
func priorFrom(all []journal.Outcome, seq uint64) Prior {
	var best Prior
	for _, o := range all {
		if o.Seq < seq && o.Seq > best.Seq && (o.Status == journal.StatusApplied || o.Status == journal.StatusDuplicate) {
			best = Prior{Seq: o.Seq, Status: o.Status}
		}
	}
	return best
}
