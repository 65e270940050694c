package projection

import (
	"context"
	"time"
)

// DisableOutcomeLookup turns off the look-up of fetched command IDs in the
// outcomes stream, for BenchmarkOutcomeLookup to measure what it costs.
func DisableOutcomeLookup(p *Projector) { p.noOutcomeLookup = true }

// WatchStore runs the retry policy's watch of a's store calls with warnings
// every warnEvery, until the returned function is called.
func WatchStore(a *Applier, warnEvery time.Duration) (stop func()) {
	a.policy.warnEvery = warnEvery
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.policy.watch(ctx) }()
	return func() { cancel(); <-done }
}

// SetHeldRetry sets the backoff of held partitions' retries for a test,
// and returns a function that restores it.
func SetHeldRetry(lo, hi time.Duration) (restore func()) {
	oldLo, oldHi := heldRetryMin, heldRetryMax
	heldRetryMin, heldRetryMax = lo, hi
	return func() { heldRetryMin, heldRetryMax = oldLo, oldHi }
}

// SetIDFilterWait sets how long a batch waits for the first-seen filter
// to reach it, for a test, and returns a function that restores it.
func SetIDFilterWait(d time.Duration) (restore func()) {
	old := idFilterWait
	idFilterWait = d
	return func() { idFilterWait = old }
}
