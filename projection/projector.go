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

	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/projection/shards"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
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
	// If zero, wire.DefaultDurable ("projector").
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
	// DrainTimeout bounds how long a shard keeps finishing its batch in
	// flight once Run's context is cancelled or the shard is handed off.
	// A batch still unfinished then (the store or JetStream is down) is
	// abandoned unacknowledged, as after a crash: the shard's next owner
	// processes it again, and the rows' _seq skip what already applied.
	// If zero, 15 s (within Kubernetes' default grace period of 30 s);
	// negative: no bound.
	DrainTimeout time.Duration
	// NoChangeFeed turns the change feed off.
	NoChangeFeed bool
	// NoReply turns off the replies to waiting clients (SPEC §5, "The
	// reply before the durable record"): clients then learn an applied
	// command's outcome when it is stored, as from a projector of the
	// previous release. For accounts whose permissions deny publishing on
	// wire.ReplyPrefix.>, and for the tests of that upgrade path.
	NoReply bool
	// OutcomesMaxAge and ChangesMaxAge are how long the OUTCOMES and CHANGES
	// streams keep messages. If zero, forever for a new stream, and an
	// existing stream's limit is left as it is; negative removes a limit.
	OutcomesMaxAge, ChangesMaxAge time.Duration
	// SweepInterval is the time the anti-entropy sweep takes for one
	// complete pass over a shard's partitions: each is checked against the
	// journal, and one the store lost confirmed writes of is recorded
	// behind (sweep.go, docs/operating.md "When the store lost writes"). The
	// checks of a pass are spread over it, at most 20 a second per shard,
	// each one point read of the store. If zero, DefaultSweepInterval (10
	// minutes: 10,000 partitions at 16.7 reads a second); negative: no
	// sweep (a shard is still checked when it starts).
	SweepInterval time.Duration
	// IDFilter is the number of command IDs the first-seen filter is
	// sized for (ids.go, SPEC §5 "A command ID seen for the first time"):
	// a batch whose command IDs no earlier journal message carried
	// decides without looking up earlier outcomes. Beyond it the filter's
	// false positives (1% up to it) grow, and more batches look their IDs
	// up; nothing else changes. If zero, DefaultIDFilter (10 million,
	// about 12 MB); negative: no filter, every batch looks its IDs up.
	IDFilter int
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
		c.Durable = wire.DefaultDurable
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
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 15 * time.Second
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	if c.IDFilter == 0 {
		c.IDFilter = DefaultIDFilter
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
	// outcomes reads OUTCOMES for every batch, one reader so that its
	// look-ups share what they learn (outcomes.Reader.LatestAll).
	outcomes *outcomes.Reader
	// ids is the first-seen filter of command IDs (ids.go); nil when off.
	ids *idFilter
	// owned: the shards this instance applies now; storeBack signals that
	// the store answers again after an outage (behind.go).
	ownedMu   sync.Mutex
	owned     map[int]bool
	storeBack chan struct{}
	// record is the durable record of partitions behind (behind.go).
	record *lost.Record
	// resumeGen counts the calls of Resume (held.go).
	resumeMu  sync.Mutex
	resumeGen uint64
}

// outcomeReader returns the projector's reader of OUTCOMES.
func (p *Projector) outcomeReader() *outcomes.Reader {
	if p.outcomes == nil {
		return outcomes.NewReader(p.js) // a Projector built by a test
	}
	return p.outcomes
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
	_, changes, err := outcomes.EnsureConfig(ctx, js, outcomes.Config{MaxAge: cfg.OutcomesMaxAge}, journal.WithReplicas(cfg.Replicas))
	if err != nil {
		return nil, err
	}
	logStreamChanges(cfg.Logger, wire.OutcomesStream, changes)
	if !cfg.NoChangeFeed {
		changes, err := journal.EnsureChanges(ctx, js, cfg.ChangesMaxAge, journal.WithReplicas(cfg.Replicas))
		if err != nil {
			return nil, err
		}
		logStreamChanges(cfg.Logger, wire.ChangesStream, changes)
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
	if cfg.Applier.Layouts == nil {
		cfg.Applier.Layouts = JournalLayouts(j, cfg.Logger)
	}
	p := &Projector{cfg: cfg, js: js, j: j, store: s, applier: NewApplier(s, cfg.Applier), log: cfg.Logger, stats: stats, obs: cfg.Observer,
		outcomes: outcomes.NewReader(js), storeBack: make(chan struct{}, 1)}
	if cfg.IDFilter > 0 {
		p.ids = newIDFilter(j, cfg.IDFilter, cfg.Logger)
	}
	p.applier.policy.onBack = func() {
		select {
		case p.storeBack <- struct{}{}:
		default:
		}
	}
	if p.record, err = lost.Ensure(ctx, js, j.Name(), cfg.Durable, cfg.Replicas); err != nil {
		return nil, err
	}
	p.applier.record = p.recordBehind
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
	var following sync.WaitGroup
	defer func() { stopCheck(); following.Wait() }()
	go p.applier.policy.watch(checkCtx)
	go func() {
		for {
			select {
			case <-checkCtx.Done():
				return
			case <-p.storeBack:
				p.recheckOwned(checkCtx)
			}
		}
	}()
	go func() {
		if err := p.applier.policy.checkStore(checkCtx, p.store); err != nil && checkCtx.Err() == nil {
			p.log.Error("table store check failed", "err", err)
		}
	}()
	if p.ids != nil {
		following.Add(1)
		go func() { defer following.Done(); p.ids.run(checkCtx) }()
	}
	loaded := make(chan struct{})
	following.Add(1)
	go func() { defer following.Done(); p.followRecord(checkCtx, loaded) }()
	p.awaitRecord(ctx, loaded)
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

// runShard applies one shard until ctx ends: it pulls the shard's
// consumer and hands each fetched batch, in delivery order, to
// processRetrying (batch.go).
func (p *Projector) runShard(ctx context.Context, shard int) error {
	s := &shardRun{p: p, shard: shard}
	defer func() { s.pl.stop() }()
	defer s.forgetHolds() // the shard's next run, or next owner, holds them again
	p.running(shard, true)
	defer p.running(shard, false)
	// Before anything is applied: a redelivered command would move a
	// partition's fence past what the store lost.
	took := time.Now()
	checked := p.checkBehind(ctx, shard, "the shard starts")
	if p.cfg.SweepInterval > 0 {
		var done time.Time
		if checked {
			done = time.Now()
		}
		p.stats.Sweeps.Set(shard, later(took, done))
		defer p.stats.Sweeps.Forget(shard)
		sctx, stop := context.WithCancel(ctx)
		var sweeping sync.WaitGroup
		sweeping.Add(1)
		go func() { defer sweeping.Done(); p.sweepShard(sctx, shard, done) }()
		defer func() { stop(); sweeping.Wait() }()
	}
	if !s.reopen(ctx, 0) {
		return nil
	}
	// The pending batch is acknowledged once its record is stored, on the
	// way out too (pipeline.go).
	defer func() { _ = s.flush(ctx) }()
	for ctx.Err() == nil {
		if s.pending.ready() {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
		msgs, err := s.pl.next(ctx, time.Second, s.pending.finished())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if err := s.flush(ctx); err != nil {
				return err
			}
			if !s.pullFailed(ctx, err) {
				return nil
			}
			continue
		}
		if len(msgs) == 0 && s.pending != nil {
			// The pending batch's record is stored, or a second passed.
			if err := s.flush(ctx); err != nil {
				return err
			}
			continue
		}
		p.observeFetch(ctx, shard, s.cons, msgs)
		why := ""
		if len(msgs) == 0 && s.tail.due() {
			msgs, why = s.idle(ctx)
		}
		todo, gap := s.inOrder(msgs)
		if err := s.apply(ctx, todo); err != nil {
			return err
		}
		asked, gen := p.resumeAsked(s.resumeGen)
		s.resumeGen = gen
		if len(s.holds.parts) > 0 && (asked || s.holds.heldDue()) && ctx.Err() == nil {
			if err := s.flush(ctx); err != nil {
				return err
			}
			if err := s.retryHeld(ctx, asked); err != nil {
				return err
			}
		}
		if gap {
			why = "a gap in the delivery sequence"
		}
		if why != "" && ctx.Err() == nil {
			if err := s.flush(ctx); err != nil {
				return err
			}
			if !s.resume(ctx, why) {
				return nil
			}
		}
	}
	return nil
}

// shardRun is one shard's consumer as runShard pulls from it.
//
// expect is the consumer delivery sequence of the next message. JetStream
// numbers every delivery; a gap means deliveries were lost in transit (a
// server restart, a dropped connection). Those messages would come back
// only after their ack wait, behind later messages of their partitions, so
// the shard applies what came before the gap and then recreates its
// consumer just after the last sequence it applied.
type shardRun struct {
	p      *Projector
	shard  int
	cons   jetstream.Consumer
	pl     *puller
	last   uint64 // the stream sequence of the last message applied
	expect uint64
	tail   tailWatch
	// holds are the partitions the shard holds (held.go); resumeGen the
	// Projector.Resume generation it has seen.
	holds     shardHolds
	resumeGen uint64
	// pending is the batch processed last, acknowledged once its record is
	// stored (pipeline.go).
	pending *pending
}

// reopen (re)opens the consumer at stream sequence from (0: its ack
// floor) with a new pull on it; false when ctx ended.
func (s *shardRun) reopen(ctx context.Context, from uint64) bool {
	p := s.p
	s.pl.stop()
	s.pl = nil
	from = s.reopenFrom(from)
	for s.pl == nil {
		if s.cons, s.last = p.reopenConsumer(ctx, s.shard, from); s.cons == nil {
			return false
		}
		pull := s.cons
		if p.wrapConsumer != nil {
			pull = p.wrapConsumer(s.cons)
		}
		var err error
		if s.pl, err = p.newPuller(pull); err == nil {
			break
		}
		p.log.Warn("pulling from the consumer failed; recreating it", LogShard, s.shard, LogSeq, s.last+1, "err", err)
		p.obs.Retry(RetryFetch)
		from = s.last + 1
		if retry.Sleep(ctx, time.Second) != nil {
			return false
		}
	}
	s.expect, s.tail = 1, newTailWatch(s.cons, s.p.reconnects())
	return true
}

// pullFailed recreates the consumer after a failed pull; false when ctx
// ended.
func (s *shardRun) pullFailed(ctx context.Context, err error) bool {
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) {
		s.p.log.Warn("consumer gone; recreating it", LogShard, s.shard, LogSeq, s.last+1, "err", err)
	} else {
		s.p.log.Warn("pulling failed; recreating the consumer", LogShard, s.shard, LogSeq, s.last+1, "err", err)
		s.p.obs.Retry(RetryFetch)
	}
	return s.reopen(ctx, s.last+1)
}

// idle checks an idle shard's consumer: were deliveries lost at the tail,
// with nothing after them to show a gap, or is no pull request of the
// shard on the server? It returns what came meanwhile, and why the shard
// must resume ("" if it need not).
func (s *shardRun) idle(ctx context.Context) ([]jetstream.Msg, string) {
	st, err := s.tail.check(ctx, s.cons, s.expect-1, s.p.reconnects())
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.p.log.Debug("checking the consumer failed", LogShard, s.shard, "err", err)
		}
		return nil, ""
	case st.replaced:
		return nil, "the consumer was replaced"
	case st.beyond == 0 && st.waiting == 0, st.beyond > 0 && !st.lost:
		// Nothing missing, or deliveries still on their way: the shard
		// goes on pulling them.
		return nil, ""
	}
	// Delivered and not taken yet, or a pull request on its way: wait a
	// moment for them.
	msgs, err := s.pl.next(ctx, tailGrace, nil)
	if err != nil || len(msgs) > 0 {
		return msgs, ""
	}
	if st.beyond == 0 {
		return nil, fmt.Sprintf("%d messages wait and no pull request reached the server", st.waiting)
	}
	return nil, fmt.Sprintf("%d deliveries never arrived", st.beyond)
}

// reconnects returns how often the client connection reconnected.
func (p *Projector) reconnects() uint64 {
	if nc := p.js.Conn(); nc != nil {
		return nc.Stats().Reconnects
	}
	return 0
}

// inOrder takes the messages that follow the last delivery without a gap
// and were not applied before; gap says a delivery was missing.
func (s *shardRun) inOrder(msgs []jetstream.Msg) (todo []jetstream.Msg, gap bool) {
	for _, m := range msgs {
		md, err := m.Metadata()
		if err != nil || md.Sequence.Consumer != s.expect {
			// Unreadable metadata (not a JetStream delivery) is treated
			// as a gap too: skipping the message would let the
			// cumulative ack of a later one acknowledge it unapplied.
			return todo, true
		}
		s.expect++
		if md.Sequence.Stream <= s.last {
			// A redelivery of a message already applied, or held: acked
			// only below what the shard holds.
			if f := s.holds.floor(); f == 0 || md.Sequence.Stream < f {
				_ = m.Ack()
			}
			continue
		}
		todo = append(todo, m)
	}
	return todo, false
}

// resume reopens the consumer just after the last message applied, so
// that what was lost is delivered again in journal order; false when ctx
// ended.
func (s *shardRun) resume(ctx context.Context, why string) bool {
	s.p.stats.LostDeliveries.Add(1)
	s.p.log.Warn("deliveries lost; resuming in journal order", LogShard, s.shard, LogSeq, s.last+1, "why", why)
	s.p.obs.Retry(RetryDeliveryGap)
	return s.reopen(ctx, s.last+1)
}

// reopenConsumer recreates the shard's consumer at stream sequence from,
// retrying with backoff while JetStream is unavailable (a gap usually comes
// from a server restart, and the server may still be starting). It returns
// a nil consumer only when ctx ends.
func (p *Projector) reopenConsumer(ctx context.Context, shard int, from uint64) (jetstream.Consumer, uint64) {
	b := journalBackoff()
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
		if retry.Sleep(ctx, wait) != nil {
			return nil, 0
		}
	}
}

// journalBackoff is the backoff of the projector's retries against
// JetStream: recreating a consumer, processing a batch again.
func journalBackoff() backoff.BackOff { return retry.Backoff(100*time.Millisecond, 5*time.Second, 0) }

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
	name := wire.ConsumerName(p.cfg.Durable, shard)
	cfg := jetstream.ConsumerConfig{
		Durable:       name,
		FilterSubject: wire.ShardFilter(shard),
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
			from = journal.AppliedOf(info).Through + 1
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
