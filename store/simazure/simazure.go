package simazure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/store"
)

var _ store.Store = (*Store)(nil)

// Defaults: Azure's scalability targets for Table storage divided by four.
const (
	DefaultLatency       = 5 * time.Millisecond
	DefaultPartitionRate = 500   // entities/s per partition
	DefaultAccountRate   = 5_000 // entities/s per account
	DefaultBurst         = time.Second
)

// AzureSDKRetry is the retry policy store/azure gives the Azure SDK by
// default (azure.Config: MaxRetries 4, RetryDelay 400 ms, MaxRetryDelay
// 20 s): a 503 reaches the caller only after about ten seconds of retries.
var AzureSDKRetry = Retry{MaxRetries: 4, Delay: 400 * time.Millisecond, MaxDelay: 20 * time.Second}

// Retry is a client's policy for requests answered 503 ServerBusy, as the
// Azure SDK (azcore policy.RetryOptions) does it: retry n waits
// Delay·(2ⁿ−1), times a random factor in [0.8, 1.3), at most MaxDelay. The
// zero value never retries.
type Retry struct {
	// MaxRetries is how often a throttled request is sent again.
	MaxRetries int
	// Delay is the first wait. MaxDelay caps every wait; if zero, no cap.
	Delay, MaxDelay time.Duration
}

// Clock is the time seam of the simulation.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or returns ctx's error if ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Config configures the simulated account. The zero value is the defaults
// above with no client retries.
type Config struct {
	// Latency is added to every request. If zero, 5 ms; negative, none.
	Latency time.Duration
	// PartitionRate is the entities per second one partition admits. If
	// zero, 500; negative, no limit.
	PartitionRate float64
	// AccountRate is the entities per second the account admits. If zero,
	// 5,000; negative, no limit.
	AccountRate float64
	// Burst sizes every bucket as this much time at its rate, and at least
	// store.MaxOps entities. If zero, one second.
	Burst time.Duration
	// Retry is the client's retry policy for throttled requests; the zero
	// value answers ErrBusy at once. AzureSDKRetry is store/azure's.
	Retry Retry
	// Clock is the time source. If nil, the real clock.
	Clock Clock
}

func (c *Config) setDefaults() {
	if c.Latency == 0 {
		c.Latency = DefaultLatency
	}
	if c.PartitionRate == 0 {
		c.PartitionRate = DefaultPartitionRate
	}
	if c.AccountRate == 0 {
		c.AccountRate = DefaultAccountRate
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	for _, r := range []struct {
		name string
		v    float64
	}{{"PartitionRate", c.PartitionRate}, {"AccountRate", c.AccountRate}} {
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) {
			errs = append(errs, fmt.Errorf("%s %v: must be a finite number", r.name, r.v))
		}
	}
	if c.Burst < 0 {
		errs = append(errs, fmt.Errorf("burst %s: must not be negative", c.Burst))
	}
	if c.Retry.MaxRetries < 0 || c.Retry.Delay < 0 || c.Retry.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("Retry %+v: must not be negative", c.Retry))
	}
	return errors.Join(errs...)
}

// Stats counts what the simulated service answered since New.
type Stats struct {
	// Requests is every request the service answered, 503s and client
	// retries included.
	Requests int64
	// Busy is the requests answered 503 ServerBusy.
	Busy int64
	// Transactions and Reads (Get and Query) are the requests admitted.
	Transactions, Reads int64
	// Written is the operations of the transactions that committed.
	Written int64
	// Entities is every entity charged to the account.
	Entities int64
}

// Store is a simulated Azure Tables account over an inner store. It is
// safe for concurrent use. It does not close the inner store.
type Store struct {
	inner store.Store
	cfg   Config
	start time.Time

	mu      sync.Mutex
	account bucket
	parts   map[partKey]*bucket
	sweepAt int // sweep idle partitions when parts grows past this

	requests, busy, txs, reads, written, entities atomic.Int64
}

type partKey struct{ table, pk string }

// bucket is a token bucket: tokens at the time at.
type bucket struct {
	tokens float64
	at     time.Time
}

// fill adds the tokens earned since b.at, up to capacity.
func (b *bucket) fill(now time.Time, rate, capacity float64) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(capacity, b.tokens+rate*d.Seconds())
		b.at = now
	}
}

// New returns a simulated account in front of inner.
func New(inner store.Store, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("simazure: %w", err)
	}
	cfg.setDefaults()
	now := cfg.Clock.Now()
	return &Store{inner: inner, cfg: cfg, start: now, account: bucket{at: now},
		parts: make(map[partKey]*bucket), sweepAt: minSweep}, nil
}

// minSweep is the number of partition buckets kept before idle ones are
// dropped.
const minSweep = 100_000

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	return Stats{
		Requests: s.requests.Load(), Busy: s.busy.Load(),
		Transactions: s.txs.Load(), Reads: s.reads.Load(),
		Written: s.written.Load(), Entities: s.entities.Load(),
	}
}

// Config returns the configuration in effect, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

func (s *Store) capacity(rate float64) float64 {
	return max(rate*s.cfg.Burst.Seconds(), store.MaxOps)
}

// admit takes cost from the account's bucket and, when pk is set, the
// partition's, if both hold it. It returns "" or the limit that refused.
func (s *Store) admit(table, pk string, scoped bool, cost float64) string {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.cfg.AccountRate; r > 0 {
		s.account.fill(now, r, s.capacity(r))
		if s.account.tokens < cost {
			return "account"
		}
	}
	var part *bucket
	if r := s.cfg.PartitionRate; scoped && r > 0 {
		part = s.partition(table, pk, now)
		part.fill(now, r, s.capacity(r))
		if part.tokens < cost {
			return "partition"
		}
		part.tokens -= cost
	}
	if s.cfg.AccountRate > 0 {
		s.account.tokens -= cost
	}
	s.entities.Add(int64(cost))
	return ""
}

// charge takes cost from the buckets whatever they hold.
func (s *Store) charge(table, pk string, scoped bool, cost float64) {
	if cost <= 0 {
		return
	}
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.AccountRate > 0 {
		s.account.tokens -= cost
	}
	if r := s.cfg.PartitionRate; scoped && r > 0 {
		b := s.partition(table, pk, now)
		b.fill(now, r, s.capacity(r))
		b.tokens -= cost
	}
	s.entities.Add(int64(cost))
}

// partition returns the bucket of a partition, creating it as if it had
// been empty when the account was. Call with s.mu held.
func (s *Store) partition(table, pk string, now time.Time) *bucket {
	k := partKey{strings.ToLower(table), pk}
	b := s.parts[k]
	if b != nil {
		return b
	}
	if len(s.parts) >= s.sweepAt {
		// A full bucket is what a new one would be: drop those.
		r := s.cfg.PartitionRate
		for k, b := range s.parts {
			if b.fill(now, r, s.capacity(r)); b.tokens >= s.capacity(r) {
				delete(s.parts, k)
			}
		}
		s.sweepAt = max(minSweep, 2*len(s.parts))
	}
	b = &bucket{at: s.start}
	s.parts[k] = b
	return b
}

// do sends one request: the latency, then admission, retried as the client
// policy says while throttled, then call.
func (s *Store) do(ctx context.Context, op, table, pk string, scoped bool, cost float64, call func() error) error {
	for try := 0; ; try++ {
		if s.cfg.Latency > 0 {
			if err := s.cfg.Clock.Sleep(ctx, s.cfg.Latency); err != nil {
				return fmt.Errorf("simazure: %s: %w", op, err)
			}
		}
		s.requests.Add(1)
		limit := s.admit(table, pk, scoped, cost)
		if limit == "" {
			return call()
		}
		s.busy.Add(1)
		if try >= s.cfg.Retry.MaxRetries {
			rate := s.cfg.AccountRate
			if limit == "partition" {
				rate = s.cfg.PartitionRate
			}
			where := table
			if scoped {
				where = fmt.Sprintf("%s/%q", table, pk)
			}
			return fmt.Errorf("simazure: %s %s: 503 ServerBusy, over the %s limit of %g entities/s: %w",
				op, where, limit, rate, store.ErrBusy)
		}
		if err := s.cfg.Clock.Sleep(ctx, s.retryDelay(try+1)); err != nil {
			return fmt.Errorf("simazure: %s: %w", op, err)
		}
	}
}

// retryDelay is the wait before retry n (from 1), as azcore computes it.
func (s *Store) retryDelay(n int) time.Duration {
	r := s.cfg.Retry
	d := float64(r.Delay) * float64(int64(1)<<min(n, 62)-1) * (0.8 + rand.Float64()/2)
	if r.MaxDelay > 0 && d > float64(r.MaxDelay) {
		return r.MaxDelay
	}
	return time.Duration(min(d, math.MaxInt64))
}

// CreateTable implements store.Store.
func (s *Store) CreateTable(ctx context.Context, table string) error {
	return s.do(ctx, "create table", table, "", false, 1, func() error { return s.inner.CreateTable(ctx, table) })
}

// DeleteTable implements store.Store.
func (s *Store) DeleteTable(ctx context.Context, table string) error {
	return s.do(ctx, "delete table", table, "", false, 1, func() error { return s.inner.DeleteTable(ctx, table) })
}

// ListTables implements store.Store.
func (s *Store) ListTables(ctx context.Context) ([]string, error) {
	var names []string
	err := s.do(ctx, "list tables", "", "", false, 1, func() (err error) {
		names, err = s.inner.ListTables(ctx)
		return err
	})
	return names, err
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	var e store.Entity
	err := s.do(ctx, "get", table, pk, true, 1, func() (err error) {
		s.reads.Add(1)
		e, err = s.inner.Get(ctx, table, pk, rk)
		return err
	})
	return e, err
}

// Query implements store.Store. It is admitted on a cost of one entity and
// pays for the rest of the page it returns afterwards.
func (s *Store) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	var p store.Page
	scoped := !q.AllPartitions
	err := s.do(ctx, "query", table, q.PK, scoped, 1, func() (err error) {
		s.reads.Add(1)
		p, err = s.inner.Query(ctx, table, q)
		s.charge(table, q.PK, scoped, float64(len(p.Entities)-1))
		return err
	})
	return p, err
}

// Transact implements store.Store; it costs one entity per operation, and
// passes on the etags the inner store reports.
func (s *Store) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	cost := float64(min(max(len(ops), 1), store.MaxOps))
	var etags []string
	err := s.do(ctx, "transaction", table, pk, true, cost, func() (err error) {
		s.txs.Add(1)
		etags, err = s.inner.Transact(ctx, table, pk, ops)
		if err == nil {
			s.written.Add(int64(len(ops)))
		}
		return err
	})
	return etags, err
}

// Partitions implements store.Store: as Azure's skip scan, one request per
// partition listed, each costing one entity of the account.
func (s *Store) Partitions(ctx context.Context, table string, fn func(pk string) error) error {
	var pks []string
	err := s.do(ctx, "query", table, "", false, 1, func() error {
		s.reads.Add(1)
		return s.inner.Partitions(ctx, table, func(pk string) error {
			pks = append(pks, pk)
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, pk := range pks {
		if err := fn(pk); err != nil {
			return err
		}
	}
	return nil
}

// Limits implements store.Store: the inner store's.
func (s *Store) Limits() events.Limits { return s.inner.Limits() }

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error { return retry.Sleep(ctx, d) }
