package projection

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/wire"
)

// The anti-entropy sweep: a store that lost confirmed writes to a
// partition nobody writes again is found by neither way of behind.go as
// long as the shard keeps running (its start is long past, and no command
// comes to show the fence went back). So each shard this instance applies
// walks its partitions again and again, paced, with the check of a shard's
// start (checkPartitionBehind: the fence against the newest command this
// projector acknowledged, then the outcomes after the fence), and records
// what is behind as the other two ways do (Applier.behind).
//
// The partitions are the shard's journal subjects (the stream's subjects
// under the shard's filter), listed at the start of each pass. One check
// costs the store one point read (the fence), and NATS the partition's
// newest message and, at most once a second, the consumer's ack floor;
// only a partition whose fence is older than that message costs more
// (the outcomes after the fence, one fence read more).
//
// Pacing (sweepPace): a pass spreads its checks evenly over
// Config.SweepInterval, at most sweepRate a second per shard. The default,
// 10 minutes, covers 10,000 partitions in 10 minutes with 16.7 fence reads
// a second (10,000 / 600 s), whichever shards they are in: about 0.1% of
// the 20,000 entities a second an Azure storage account is scaled for, and
// about 1% of what Azurite serves on two cores (a few thousand point
// reads a second). A shard of more than SweepInterval × sweepRate
// partitions (12,000 at the default) takes longer than the interval; with
// 16 shards swept at the cap, at most 16 × 20 = 320 reads a second go to
// the store, 1.6% of an account's target.
//
// Races: only commands the shard's consumer acknowledged count, and the
// ack floor is read before the partition's newest message and its fence.
// A command acknowledged was applied (its fence written) before it was
// acknowledged, so a fence read afterwards is at it or past it unless the
// store lost it; a command applied after the ack floor was read is past
// it and not looked at, and one applied between the fence read and the
// walk of the outcomes makes the walk read the fence again before it says
// anything (TestSweepNoFalsePositives, TestSweepRace).
//
// A partition recorded behind already is not checked again; a pass in
// which a check failed (NATS or the store did not answer in time) is not
// complete. Stats.Sweeps says when each shard's last complete pass ended
// (the check at the shard's start counts as one), for the metric.

// sweepRate caps the checks of one shard's sweep a second; sweepRetry is
// how soon a failed listing of a shard's partitions is tried again;
// sweepAckedAge is how long an ack floor read is used for.
const (
	sweepRate     = 20
	sweepRetry    = 10 * time.Second
	sweepAckedAge = time.Second
)

// DefaultSweepInterval is Config.SweepInterval when zero.
const DefaultSweepInterval = 10 * time.Minute

// sweepShard sweeps shard until ctx ends. done is when the check at the
// shard's start completed (zero: it did not).
func (p *Projector) sweepShard(ctx context.Context, shard int, done time.Time) {
	pace := newSweepPace(p.cfg.SweepInterval, time.Second/sweepRate, min(sweepRetry, p.cfg.SweepInterval), done)
	sw := shardSweep{p: p, shard: shard}
	failures, found := 0, p.stats.Behind.Len()
	for {
		st := pace.step()
		if retry.Sleep(ctx, time.Until(st.At)) != nil {
			return
		}
		if st.List {
			parts, err := sw.list(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				p.log.Warn("listing the partitions to sweep failed; trying again", LogShard, shard, "in", pace.retry, "err", err)
				pace.listFailed(time.Now())
				continue
			}
			pace.listed(time.Now(), parts)
		} else {
			err := sw.check(ctx, st.Part)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				failures++
				p.log.Debug("sweep: checking a partition failed", LogShard, shard, "subject", st.Part, "err", err)
			}
			pace.checked(time.Now(), err == nil)
		}
		if !pace.passEnded() {
			continue
		}
		if c := pace.completed(); !c.IsZero() {
			p.stats.Sweeps.Set(shard, c)
		}
		if failures > 0 {
			p.log.Warn("the sweep could not check every partition of the shard against the journal; the pass is not complete",
				LogShard, shard, "failed", failures)
		} else {
			p.log.Debug("swept the shard against the journal", LogShard, shard,
				"behind", p.stats.Behind.Len()-found)
		}
		failures, found = 0, p.stats.Behind.Len()
	}
}

// shardSweep is the I/O of one shard's sweep: the journal stream and the
// consumer's ack floor as last read.
type shardSweep struct {
	p       *Projector
	shard   int
	s       jetstream.Stream
	acked   uint64
	ackedAt time.Time
}

// list returns the shard's journal subjects, in order.
func (w *shardSweep) list(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, behindCheckTimeout)
	defer cancel()
	s, err := w.p.js.Stream(ctx, w.p.j.Name())
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(wire.ShardFilter(w.shard)))
	if err != nil {
		return nil, fmt.Errorf("partitions of shard %d: %w", w.shard, err)
	}
	w.s = s
	parts := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		parts = append(parts, subj)
	}
	slices.Sort(parts)
	return parts, nil
}

// check checks the partition of journal subject subj, unless it is
// recorded behind already.
func (w *shardSweep) check(ctx context.Context, subj string) error {
	table, _, pk, err := wire.ParseJournalSubject(subj)
	if err != nil || w.p.stats.Behind.has(table, pk) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, behindCheckTimeout)
	defer cancel()
	// The ack floor before the fence: see the races above. An older one
	// is as good (it only looks at less).
	if time.Since(w.ackedAt) > sweepAckedAge {
		at := time.Now()
		if w.acked, err = w.p.ackedFloor(ctx, w.s, w.shard); err != nil {
			return err
		}
		w.ackedAt = at
	}
	if w.acked == 0 {
		return nil
	}
	return w.p.checkPartitionBehind(ctx, w.s, subj, w.acked)
}

// Sweeps says when each shard's last complete sweep ended (sweep.go), for
// the shards this instance applies and sweeps.
type Sweeps struct {
	mu   sync.Mutex
	done map[int]time.Time
}

// Set records that shard's last complete sweep ended at at.
func (s *Sweeps) Set(shard int, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(map[int]time.Time)
	}
	s.done[shard] = at
}

// Forget drops shard (this instance no longer applies it).
func (s *Sweeps) Forget(shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.done, shard)
}

// Completed returns, by shard, when the last complete sweep of each shard
// this instance applies ended: of every partition of the shard, found in
// the journal, checked against the store. A shard that has had none since
// this instance took it has the time it took it. Shards not swept
// (Config.SweepInterval negative) are absent.
func (s *Sweeps) Completed() map[int]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]time.Time, len(s.done))
	for sh, t := range s.done {
		out[sh] = t
	}
	return out
}
