package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/wire"
)

// The metric names of SPEC §9. They are a contract: keep them stable.
const (
	NameShardsOwned     = "tablejournal_projector_shards_owned"
	NameAppliedSequence = "tablejournal_projector_applied_sequence"
	NameLagMessages     = "tablejournal_projector_lag_messages"
	NameLagSeconds      = "tablejournal_projector_lag_seconds"
	NameCommands        = "tablejournal_projector_commands_total"
	NameBatchCommands   = "tablejournal_projector_batch_commands"
	NameBatchSeconds    = "tablejournal_projector_batch_seconds"
	NameApplyDelay      = "tablejournal_projector_apply_delay_seconds"
	NameStoreRequest    = "tablejournal_store_request_seconds"
	NameRetries         = "tablejournal_projector_retries_total"
	NameShardFailures   = "tablejournal_projector_shard_failures_total"
	// Not in SPEC §9. NameJournalShards is the journal's shard count, so
	// that an alert can compare it with the shards owned by all instances;
	// NameDisagreements counts the times the table disagreed with what the
	// projector wrote (projection.Stats).
	NameJournalShards = "tablejournal_projector_journal_shards"
	NameDisagreements = "tablejournal_projector_disagreements_total"
)

// Store operations and results, the labels of tablejournal_store_request_seconds.
const (
	OpGet      = "get"
	OpQuery    = "query"
	OpTransact = "transact"

	ResultOK       = "ok"
	ResultBusy     = "busy"
	ResultConflict = "conflict"
	ResultError    = "error"
)

// Retry reasons counted by the projector's projection.Stats rather than
// reported to the Observer: a store call retried after a transient error
// (busy, throttled, unreachable), and a transaction refused because
// another writer committed to the partition first.
const (
	RetryStoreBusy     = "store_busy"
	RetryFenceConflict = "conflict"
)

var (
	statuses = []wire.Status{wire.StatusApplied, wire.StatusRejected, wire.StatusDuplicate, projection.Skipped}
	storeOps = []string{OpGet, OpQuery, OpTransact}
	results  = []string{ResultOK, ResultBusy, ResultConflict, ResultError}
	reasons  = []string{projection.RetryPublish, projection.RetryFetch, projection.RetryConsumer, projection.RetryDeliveryGap}
)

// Metrics collects what a projector does. Create it with New, pass it as
// projection.Config.Observer, and wrap the table store with Store. It is
// safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	now func() time.Time

	commands      map[wire.Status]prometheus.Counter
	counts        map[wire.Status]*atomic.Uint64
	batchCommands prometheus.Histogram
	batchSeconds  prometheus.Histogram
	applyDelay    prometheus.Histogram
	storeSeconds  map[[2]string]prometheus.Observer
	retries       map[string]*atomic.Uint64 // by reason, as reported to Retry
	stats         atomic.Pointer[projection.Stats]
	shardFailures prometheus.Counter
	failures      atomic.Uint64
	journalShards atomic.Int64

	mu     sync.Mutex
	shards map[int]*shardState

	st storeState
}

// shardState is what is known of one running shard.
type shardState struct {
	applied uint64    // the last journal sequence applied
	pending uint64    // messages of the shard not yet applied
	oldest  time.Time // journal time of the oldest of them; zero when none
	fetched time.Time // when the batch in flight arrived
	handled uint64    // messages applied since the shard started here
}

// New returns Metrics with a registry holding the projector's metrics and
// the Go and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg:      prometheus.NewRegistry(),
		now:      time.Now,
		commands: make(map[wire.Status]prometheus.Counter),
		counts:   make(map[wire.Status]*atomic.Uint64),
		shards:   make(map[int]*shardState),
		retries:  make(map[string]*atomic.Uint64),
	}
	commands := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameCommands, Help: "Commands handled, by outcome: applied, rejected, duplicate, or skipped (redelivered, already applied).",
	}, []string{"status"})
	for _, s := range statuses {
		m.commands[s] = commands.WithLabelValues(string(s))
		m.counts[s] = new(atomic.Uint64)
	}
	m.batchCommands = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: NameBatchCommands, Help: "Commands applied per store transaction.",
		Buckets: []float64{1, 2, 5, 10, 20, 50, 100},
	})
	m.batchSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: NameBatchSeconds, Help: "Time from a fetched batch's arrival to its acknowledgement.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	})
	m.applyDelay = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: NameApplyDelay, Help: "Time from a command's journal time to its outcome being stored.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800},
	})
	storeSeconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: NameStoreRequest, Help: "Table store round trips, by operation and result (ok, busy: throttled, conflict: a transaction's condition failed, error).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"op", "result"})
	m.storeSeconds = make(map[[2]string]prometheus.Observer)
	for _, op := range storeOps {
		for _, r := range results {
			m.storeSeconds[[2]string{op, r}] = storeSeconds.WithLabelValues(op, r)
		}
	}
	for _, r := range reasons {
		m.retries[r] = new(atomic.Uint64)
	}
	m.shardFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: NameShardFailures, Help: "Shards stopped by a persistent failure.",
	})
	m.reg.MustRegister(commands, m.batchCommands, m.batchSeconds, m.applyDelay, storeSeconds,
		m.shardFailures, shardCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetJournalShards records the journal's shard count.
func (m *Metrics) SetJournalShards(n int) { m.journalShards.Store(int64(n)) }

// Registry is the registry /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

var _ projection.Observer = (*Metrics)(nil)

// ShardStarted implements projection.Observer.
func (m *Metrics) ShardStarted(shard int, applied, pending uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[shard]
	if s == nil {
		s = &shardState{}
		m.shards[shard] = s
	}
	s.applied, s.pending = applied, pending
	if pending == 0 {
		s.oldest = time.Time{}
	}
}

// ShardStopped implements projection.Observer: the shard's series go
// away (another instance may report them now).
func (m *Metrics) ShardStopped(shard int, failed bool) {
	m.mu.Lock()
	delete(m.shards, shard)
	m.mu.Unlock()
	if failed {
		m.shardFailures.Inc()
		m.failures.Add(1)
	}
}

// Fetched implements projection.Observer.
func (m *Metrics) Fetched(shard int, f projection.Fetch) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[shard]
	if s == nil {
		return
	}
	switch {
	case f.Pending == 0:
		s.pending, s.oldest = 0, time.Time{}
	case f.Messages == 0: // an empty fetch while messages are pending
		s.pending, s.oldest = f.Pending, f.Oldest
	default:
		s.pending, s.oldest, s.fetched = f.Pending, f.Oldest, now
	}
}

// BatchDone implements projection.Observer.
func (m *Metrics) BatchDone(shard int, b projection.Batch) {
	now := m.now()
	m.mu.Lock()
	s := m.shards[shard]
	if s == nil {
		m.mu.Unlock()
		return
	}
	took := now.Sub(s.fetched)
	s.applied, s.pending = b.Applied, b.Pending
	s.handled += uint64(b.Commands)
	if b.Pending == 0 {
		s.oldest = time.Time{}
	} else {
		// The next message is not older than the last applied one; the
		// next fetch, at once, says exactly.
		s.oldest = b.Last
	}
	m.mu.Unlock()
	m.batchSeconds.Observe(took.Seconds())
}

// Handled implements projection.Observer.
func (m *Metrics) Handled(status wire.Status, delay time.Duration) {
	c, ok := m.commands[status]
	if !ok {
		return
	}
	c.Inc()
	m.counts[status].Add(1)
	if status != projection.Skipped {
		m.applyDelay.Observe(max(delay, 0).Seconds())
	}
}

// Transaction implements projection.Observer.
func (m *Metrics) Transaction(commands int) { m.batchCommands.Observe(float64(commands)) }

// Retry implements projection.Observer. Reasons other than the
// projector's own are ignored.
func (m *Metrics) Retry(reason string) {
	if c, ok := m.retries[reason]; ok {
		c.Add(1)
	}
}

// SetStats makes the projector's counters (projection.Projector.Stats)
// part of the metrics: store and fence-conflict retries, disagreements.
func (m *Metrics) SetStats(s *projection.Stats) { m.stats.Store(s) }

// shardCollector exports the per-shard gauges from the shards' state at
// scrape time, so lag_seconds is the age of the oldest unapplied message
// now, not when it was last fetched.
type shardCollector struct{ m *Metrics }

var (
	descOwned    = prometheus.NewDesc(NameShardsOwned, "Shards this instance applies now.", nil, nil)
	descApplied  = prometheus.NewDesc(NameAppliedSequence, "The last journal sequence applied, per shard.", []string{"shard"}, nil)
	descLagMsgs  = prometheus.NewDesc(NameLagMessages, "Journal messages of the shard not yet applied.", []string{"shard"}, nil)
	descLagSecs  = prometheus.NewDesc(NameLagSeconds, "Age of the shard's oldest message not yet applied; 0 when caught up.", []string{"shard"}, nil)
	descJournal  = prometheus.NewDesc(NameJournalShards, "Shards of the journal, applied by all instances together.", nil, nil)
	descRetries  = prometheus.NewDesc(NameRetries, "Retries of transient failures, by reason: store_busy (a store call), conflict (another writer committed to the partition first), publish, fetch, consumer, delivery_gap.", []string{"reason"}, nil)
	descDisagree = prometheus.NewDesc(NameDisagreements, "Times the table disagreed with what the projector wrote (a store that lost confirmed writes); each is logged at ERROR.", nil, nil)
)

func (c shardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOwned
	ch <- descApplied
	ch <- descLagMsgs
	ch <- descLagSecs
	ch <- descJournal
	ch <- descRetries
	ch <- descDisagree
	ch <- descBehind
	ch <- descHeld
	ch <- descPruned
	ch <- descSweepAge
	ch <- descOutcomeLookups
	ch <- descFirstSeen
}

func (c shardCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.m.Snapshot()
	ch <- prometheus.MustNewConstMetric(descOwned, prometheus.GaugeValue, float64(len(snap.Shards)))
	if n := c.m.journalShards.Load(); n > 0 {
		ch <- prometheus.MustNewConstMetric(descJournal, prometheus.GaugeValue, float64(n))
	}
	for _, r := range reasons {
		ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(c.m.retries[r].Load()), r)
	}
	var storeRetries, fenceConflicts, disagreements int64
	if s := c.m.stats.Load(); s != nil {
		storeRetries, fenceConflicts, disagreements = s.StoreRetries.Load(), s.FenceConflicts.Load(), s.Disagreements.Load()
	}
	ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(storeRetries), RetryStoreBusy)
	ch <- prometheus.MustNewConstMetric(descRetries, prometheus.CounterValue, float64(fenceConflicts), RetryFenceConflict)
	ch <- prometheus.MustNewConstMetric(descDisagree, prometheus.CounterValue, float64(disagreements))
	collectPruned(ch, c.m.stats.Load())
	collectLookups(ch, c.m.stats.Load())
	collectBehind(ch, c.m.stats.Load())
	collectHeld(ch, c.m.stats.Load())
	collectSweeps(ch, c.m.stats.Load(), snap.At)
	for _, s := range snap.Shards {
		label := strconv.Itoa(s.Shard)
		ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(s.Applied), label)
		ch <- prometheus.MustNewConstMetric(descLagMsgs, prometheus.GaugeValue, float64(s.Pending), label)
		ch <- prometheus.MustNewConstMetric(descLagSecs, prometheus.GaugeValue, s.LagSeconds, label)
	}
}
