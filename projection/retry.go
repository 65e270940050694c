package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/store"
)

// retryPolicy is the one retry policy of the projector's store calls:
// transient errors (store.ErrBusy: throttling, a server error, a refused or
// dropped connection, a timeout) are retried with exponential backoff capped
// at a second, for as long as the outage lasts unless maxElapsed is set;
// anything else is returned at once. While the store fails, one warning with
// the reason is logged every warnEvery, not one per request, and one line
// when it answers again.
//
// A request can take long to fail: the Azure SDK retries a refused
// connection several times inside one call (about 10 s with store/azure's
// defaults). So the warnings do not wait for failures to come back: watch
// warns when requests have been in flight for warnEvery without an answer,
// and keeps warning every warnEvery while the outage lasts.
type retryPolicy struct {
	maxElapsed time.Duration // 0: never give up
	warnEvery  time.Duration
	log        *slog.Logger
	stats      *Stats

	// inflight counts the store calls under way; answered is when the
	// store last answered, or when a call started while none was in
	// flight (unix nanoseconds).
	inflight atomic.Int64
	answered atomic.Int64

	mu       sync.Mutex
	failing  bool
	since    time.Time // first failure of the current outage
	lastWarn time.Time
	failures int // since lastWarn
	lastOp   string
	lastErr  error
	// onBack, if set, is called when the store answers after an outage.
	onBack func()
}

// outageWarnEvery is how often an ongoing outage is logged.
const outageWarnEvery = 5 * time.Second

func newRetryPolicy(maxElapsed time.Duration, log *slog.Logger, stats *Stats) *retryPolicy {
	if log == nil {
		log = slog.Default()
	}
	if stats == nil {
		stats = &Stats{}
	}
	return &retryPolicy{maxElapsed: maxElapsed, warnEvery: outageWarnEvery, log: log, stats: stats}
}

// maxBusyWait caps each wait before retrying a request the store refused
// as busy. Throttling limits are per second (Azure's targets are entities
// and requests per second), so a longer wait lets capacity go unused, and
// since a shard's batch waits for its slowest partition, one partition
// asleep for the library's default of up to a minute stalls its whole
// shard. Against store/simazure answering ErrBusy unretried
// (BenchmarkSimAzure spread, see docs/performance.md) the projector
// reached 0.56 of the account limit uncapped, 0.73 capped.
const maxBusyWait = time.Second

// backoff is exponential from 50 ms, each wait at most maxBusyWait give or
// take the library's ±50% jitter, for maxElapsed in all (0: forever).
func (p *retryPolicy) backoff() backoff.BackOff {
	return retry.Backoff(50*time.Millisecond, maxBusyWait, p.maxElapsed)
}

// failed records a transient failure of what and logs it if the last
// warning is older than outageWarnEvery.
func (p *retryPolicy) failed(what string, err error) {
	p.stats.StoreRetries.Add(1)
	now := time.Now()
	p.mu.Lock()
	if !p.failing {
		p.failing, p.since, p.lastWarn = true, now, time.Time{}
	}
	p.failures++
	p.lastOp, p.lastErr = what, err
	p.warnLocked(now)
}

// warnLocked logs the outage if the last warning is older than warnEvery;
// p.mu is held, and released.
func (p *retryPolicy) warnLocked(now time.Time) {
	warn := now.Sub(p.lastWarn) >= p.warnEvery
	n, since, what, err := p.failures, p.since, p.lastOp, p.lastErr
	if warn {
		p.lastWarn, p.failures = now, 0
	}
	p.mu.Unlock()
	if warn {
		p.log.Warn("table store unavailable; retrying", "op", what, "failures", n,
			"for", now.Sub(since).Round(time.Millisecond), "err", err)
	}
}

// watch warns while the store does not answer, every warnEvery, whether or
// not a request has failed yet (see retryPolicy), until ctx ends.
func (p *retryPolicy) watch(ctx context.Context) {
	t := time.NewTicker(max(p.warnEvery/5, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		waiting := now.Sub(time.Unix(0, p.answered.Load()))
		stalled := p.inflight.Load() > 0 && waiting >= p.warnEvery
		p.mu.Lock()
		if !p.failing && !stalled {
			p.mu.Unlock()
			continue
		}
		if !p.failing {
			p.failing, p.since, p.lastWarn = true, now.Add(-waiting), time.Time{}
			p.lastOp, p.lastErr = "any", fmt.Errorf("no answer for %s", waiting.Round(time.Millisecond))
		}
		p.warnLocked(now)
	}
}

// begin and end bracket a store call, for watch.
func (p *retryPolicy) begin() {
	if p.inflight.Add(1) == 1 {
		p.answered.Store(time.Now().UnixNano())
	}
}

func (p *retryPolicy) end(answered bool) {
	if answered {
		p.answered.Store(time.Now().UnixNano())
	}
	p.inflight.Add(-1)
}

// succeeded ends an outage, logging how long it lasted.
func (p *retryPolicy) succeeded() {
	p.mu.Lock()
	failing, since := p.failing, p.since
	p.failing, p.failures = false, 0
	p.mu.Unlock()
	if failing {
		p.log.Info("table store available again", "after", time.Since(since).Round(time.Millisecond))
		if p.onBack != nil {
			p.onBack()
		}
	}
}

// retryStore calls op until it succeeds, fails with an error that is not
// transient, or ctx ends, under policy p.
func retryStore[T any](ctx context.Context, p *retryPolicy, what string, op func() (T, error)) (T, error) {
	b := backoff.WithContext(p.backoff(), ctx)
	v, err := backoff.RetryNotifyWithData(func() (T, error) {
		p.begin()
		v, err := op()
		p.end(err == nil || !transient(ctx, err))
		if err != nil && !transient(ctx, err) {
			return v, backoff.Permanent(err)
		}
		return v, err
	}, b, func(err error, _ time.Duration) { p.failed(what, err) })
	if err == nil {
		p.succeeded()
	}
	return v, err
}

// retryStoreErr is retryStore for calls that return only an error.
func retryStoreErr(ctx context.Context, p *retryPolicy, what string, op func() error) error {
	_, err := retryStore(ctx, p, what, func() (struct{}, error) { return struct{}{}, op() })
	return err
}

// transient reports whether a store error is worth retrying: the store's
// own ErrBusy, or a request that timed out while the caller's context is
// still live (a hung server: the client's per-try timeout expired).
func transient(ctx context.Context, err error) bool {
	return errors.Is(err, store.ErrBusy) || (ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded))
}

// checkStore waits until the table store answers, under the retry policy
// (a warning every few seconds while it does not), and logs that it does.
func (p *retryPolicy) checkStore(ctx context.Context, s store.Store) error {
	start := time.Now()
	err := retryStoreErr(ctx, p, "list tables", func() error {
		_, err := s.ListTables(ctx)
		return err
	})
	if err != nil {
		return err
	}
	p.log.Info("table store reachable", "in", time.Since(start).Round(time.Millisecond))
	return nil
}
