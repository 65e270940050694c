package projection

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// Observer receives what the projector does, for metrics and operator
// logs (internal/metrics implements it with Prometheus). Its methods are
// called from the shards' goroutines, concurrently and on the hot path:
// they must be quick and must not block. Embed [NopObserver] to implement
// only some of them.
type Observer interface {
	// ShardStarted reports that a shard's consumer is open: applied is the
	// journal sequence before the first message it will deliver, pending
	// the shard's messages waiting for it.
	ShardStarted(shard int, applied, pending uint64)
	// ShardStopped reports that a shard's loop ended, failed when a
	// persistent failure stopped it.
	ShardStopped(shard int, failed bool)
	// Fetched reports a fetch of a shard. A fetch that found nothing has
	// Messages 0; it is reported only when the consumer's state was read
	// to confirm it (Pending 0: caught up), at most every few seconds.
	Fetched(shard int, f Fetch)
	// BatchDone reports that a fetched batch was applied and acknowledged.
	BatchDone(shard int, b Batch)
	// Handled reports that a command's outcome is stored (for Skipped: that
	// a redelivered command was found already applied). delay is the time
	// from the command's journal time to its outcome being stored; zero
	// for Skipped.
	Handled(status wire.Status, delay time.Duration)
	// Transaction reports a committed store transaction that applied
	// commands.
	Transaction(commands int)
	// Retry reports one retry of something that failed transiently:
	// "publish" (outcomes or change events), "fetch", "consumer" (its
	// recreation) or "delivery_gap" (deliveries lost in transit). Store
	// retries and fence conflicts are counted in Stats.
	Retry(reason string)
}

// Retry reasons reported to [Observer.Retry].
const (
	RetryPublish     = "publish"
	RetryFetch       = "fetch"
	RetryConsumer    = "consumer"
	RetryDeliveryGap = "delivery_gap"
)

// Fetch describes one fetch of a shard.
type Fetch struct {
	// Messages is the number of messages fetched.
	Messages int
	// Pending is the shard's messages not yet applied: those fetched and
	// those still waiting behind them when the last one was delivered.
	Pending uint64
	// Oldest is the journal time of the first message fetched (or, for
	// an empty fetch, of the first pending message): the oldest message of
	// the shard not yet applied.
	Oldest time.Time
}

// Batch describes one applied and acknowledged batch of a shard.
type Batch struct {
	// Applied is the journal sequence of the batch's last message.
	Applied uint64
	// Commands is the number of messages applied (redeliveries of
	// messages already applied are not counted).
	Commands int
	// Pending is the shard's messages that were waiting behind the batch
	// when its last message was delivered.
	Pending uint64
	// Last is the journal time of the batch's last message; when Pending
	// is not zero, the next message is at most as old.
	Last time.Time
}

// NopObserver ignores everything. It is the default Observer.
type NopObserver struct{}

func (NopObserver) ShardStarted(int, uint64, uint64)   {}
func (NopObserver) ShardStopped(int, bool)             {}
func (NopObserver) Fetched(int, Fetch)                 {}
func (NopObserver) BatchDone(int, Batch)               {}
func (NopObserver) Handled(wire.Status, time.Duration) {}
func (NopObserver) Transaction(int)                    {}
func (NopObserver) Retry(string)                       {}

// JournalShards is the number of shards of the journal the projector
// applies (all instances together), for metrics.
func (p *Projector) JournalShards() int { return p.j.Shards() }

// observedShard runs a shard's loop and reports its end.
func (p *Projector) observedShard(ctx context.Context, shard int) error {
	err := p.runShard(ctx, shard)
	p.obs.ShardStopped(shard, err != nil)
	return err
}

// observeOpen reports a shard's freshly (re)created consumer, which
// delivers after sequence applied.
func (p *Projector) observeOpen(shard int, cons jetstream.Consumer, applied uint64) {
	var pending uint64
	if info := cons.CachedInfo(); info != nil {
		pending = info.NumPending
	}
	p.obs.ShardStarted(shard, applied, pending)
}

// observeReset reports a shard's consumer reset to deliver after sequence
// applied.
func (p *Projector) observeReset(shard int, r *jetstream.ConsumerResetResponse, applied uint64) {
	var pending uint64
	if r != nil && r.ConsumerInfo != nil {
		pending = r.NumPending
	}
	p.obs.ShardStarted(shard, applied, pending)
}

// observeFetch reports a fetch from the metadata of the messages it
// returned: no request to NATS. The last message's metadata says how many
// wait behind it. An empty fetch usually means the shard is caught up, but
// a server too busy to deliver within the fetch's wait returns nothing
// too; so every idleCheck while fetches come back empty, the consumer's
// state is read to say which (see observeIdle).
func (p *Projector) observeFetch(ctx context.Context, shard int, cons jetstream.Consumer, msgs []jetstream.Msg) {
	if len(msgs) == 0 {
		if p.idle.due(shard, time.Now()) {
			p.observeIdle(ctx, shard, cons)
		}
		return
	}
	f := Fetch{Messages: len(msgs), Pending: uint64(len(msgs))}
	if md, err := msgs[0].Metadata(); err == nil {
		f.Oldest = md.Timestamp
	}
	if md, err := msgs[len(msgs)-1].Metadata(); err == nil {
		f.Pending += md.NumPending
	}
	p.obs.Fetched(shard, f)
}

// idleCheck is how often an idle shard's consumer state is read.
const idleCheck = 5 * time.Second

// idleChecks remembers when each shard's consumer state was last read
// after an empty fetch. The zero value is ready to use.
type idleChecks struct {
	mu   sync.Mutex
	last map[int]time.Time
}

// due reports whether shard's state is to be read now, and if so notes it.
func (c *idleChecks) due(shard int, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.last[shard]) < idleCheck {
		return false
	}
	if c.last == nil {
		c.last = make(map[int]time.Time)
	}
	c.last[shard] = now
	return true
}

// observeIdle reports an empty fetch with what the consumer says: nothing
// pending (caught up), or how many messages are pending and the journal
// time of the first. Two requests at most, every idleCheck per idle shard.
func (p *Projector) observeIdle(ctx context.Context, shard int, cons jetstream.Consumer) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return // NATS is away: the last state stands
	}
	a := journal.AppliedOf(info)
	f := Fetch{Pending: a.Pending}
	if f.Pending > 0 {
		s, err := p.js.Stream(ctx, p.j.Name())
		if err != nil {
			return
		}
		m, err := s.GetMsg(ctx, a.Through+1, jetstream.WithGetMsgSubject(wire.ShardFilter(shard)))
		if err != nil {
			return
		}
		f.Oldest = m.Time
	}
	p.obs.Fetched(shard, f)
}

// observeBatch reports an acknowledged batch of messages to apply (not
// empty).
func (p *Projector) observeBatch(shard int, msgs []jetstream.Msg) {
	b := Batch{Commands: len(msgs)}
	if md, err := msgs[len(msgs)-1].Metadata(); err == nil {
		b.Applied, b.Pending, b.Last = md.Sequence.Stream, md.NumPending, md.Timestamp
	}
	p.obs.BatchDone(shard, b)
}
