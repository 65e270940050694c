package projection

import "time"

// sweepPace paces the anti-entropy sweep of one shard (sweep.go): what to
// do next and when. It holds no clock and does no I/O: the sweep asks it
// for the next step, waits until the step's time, does it and says what
// came of it, so the pacing is tested with a fake clock
// (TestSweepPace).
//
// A pass lists the shard's partitions and checks each once, spread evenly
// over the interval: partition i of n is due interval·i/n after the pass
// started, and no sooner than gap after the check before (the rate cap), so
// a shard of more than interval/gap partitions takes longer than the
// interval. The next pass starts interval after this one started, or gap
// after its last check when it took longer. A pass in which a check failed
// is not complete; a listing that failed is tried again retry later.
type sweepPace struct {
	interval, gap, retry time.Duration

	parts []string  // the pass's partitions; nil between passes
	next  int       // index in parts of the next partition to check
	start time.Time // when the current or last pass was listed
	last  time.Time // when the last check was done (listings are no store request)
	again time.Time // after a failed listing, when to list again
	// failed: a check of the current pass failed.
	failed bool
	// complete is when the last complete pass ended; zero for none.
	complete time.Time
}

// sweepStep is what the sweep does next: at At, list the shard's
// partitions (List) or check Part.
type sweepStep struct {
	At   time.Time
	List bool
	Part string
}

// newSweepPace paces passes of interval with at least gap between two
// steps. done is when a pass over every partition of the shard completed
// before the sweep started (the check at the shard's start), zero if
// none: the first pass starts interval after it, or at once.
func newSweepPace(interval, gap, retry time.Duration, done time.Time) *sweepPace {
	return &sweepPace{interval: interval, gap: gap, retry: retry, start: done, last: done, complete: done}
}

// step says what to do next and when; a zero At: at once.
func (p *sweepPace) step() sweepStep {
	if p.parts == nil {
		at := p.again
		if !p.last.IsZero() {
			at = later(at, p.last.Add(p.gap))
		}
		if !p.start.IsZero() {
			at = later(at, p.start.Add(p.interval))
		}
		return sweepStep{At: at, List: true}
	}
	due := p.start.Add(time.Duration(float64(p.interval) * float64(p.next) / float64(len(p.parts))))
	return sweepStep{At: later(due, p.last.Add(p.gap)), Part: p.parts[p.next]}
}

// listed starts a pass over parts at now; a pass over none is complete at
// once.
func (p *sweepPace) listed(now time.Time, parts []string) {
	p.start, p.again, p.next, p.failed = now, time.Time{}, 0, false
	if len(parts) == 0 {
		p.parts, p.complete = nil, now
		return
	}
	p.parts = parts
}

// listFailed says that the listing of now failed.
func (p *sweepPace) listFailed(now time.Time) {
	p.again = now.Add(p.retry)
}

// checked says that the partition of the last step was checked by now (ok:
// the check finished, whatever it found).
func (p *sweepPace) checked(now time.Time, ok bool) {
	p.last = now
	p.failed = p.failed || !ok
	p.next++
	if p.next < len(p.parts) {
		return
	}
	if !p.failed {
		p.complete = now
	}
	p.parts, p.next = nil, 0
}

// completed is when the last complete pass ended; zero for none.
func (p *sweepPace) completed() time.Time { return p.complete }

// passEnded says whether no pass is in progress (the last step ended one).
func (p *sweepPace) passEnded() bool { return p.parts == nil }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
