package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/wire"
)

// A store that lost confirmed writes (Azurite killed before it flushed, an
// account restored from a backup) holds partitions behind what the
// projector applied: their fence is missing or older than a command whose
// outcome says it applied. The journal is the source of truth, so such a
// partition is reported loudly (ERROR, the counters, projector status)
// until it is rebuilt from the journal (docs/operating.md, "When the store
// lost writes"). Three ways find one:
//
//   - as the projector runs, a partition whose fence went back under the
//     projector's cache (Applier.adopt);
//   - when a shard starts, before it applies anything, and again when the
//     store answers after an outage: each partition of the shard whose
//     fence is older than its newest journal message is looked at in the
//     outcomes stream (checkShardBehind);
//   - by the anti-entropy sweep (sweep.go), which checks every partition
//     of the shard in the same way, paced, as long as the shard runs: a
//     partition nobody writes after the loss is found by neither of the
//     above.
//
// Each partition found is written to the durable record (package lost)
// before the projector writes past the loss, and the record is loaded at
// start and followed as it runs, so a restart or another replica still
// reports it; a rebuild of the partition removes its entry.

// Behind is the set of partitions found behind what was applied: those
// this instance found, and those the durable record holds (package lost),
// which the projector loads at start and follows as it runs. A partition
// leaves it when its entry is removed from the record (a rebuild of the
// partition from the journal).
type Behind struct {
	mu    sync.Mutex
	parts map[string]behindEntry // by wire.BehindKey
}

type behindEntry struct {
	b        wire.BehindPartition
	recorded bool // in the durable record
}

// Add records b as found here (not yet in the durable record); false if
// its partition was known.
func (s *Behind) Add(b wire.BehindPartition) bool {
	return s.put(wire.BehindKey(b.Table, b.PK), b, false)
}

func (s *Behind) put(k string, b wire.BehindPartition, recorded bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.parts[k]; ok {
		if recorded && !e.recorded {
			s.parts[k] = behindEntry{b: b, recorded: true}
		}
		return false
	}
	if s.parts == nil {
		s.parts = make(map[string]behindEntry)
	}
	s.parts[k] = behindEntry{b: b, recorded: recorded}
	return true
}

// has says whether the partition is known behind.
func (s *Behind) has(table, pk string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.parts[wire.BehindKey(table, pk)]
	return ok
}

// remove forgets a partition (by wire.BehindKey) whose record entry was
// removed, unless this instance found it since and has not recorded it
// yet.
func (s *Behind) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.parts[key]; ok && e.recorded {
		delete(s.parts, key)
	}
}

// unrecorded lists the partitions found here and not yet recorded.
func (s *Behind) unrecorded() []wire.BehindPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []wire.BehindPartition
	for _, e := range s.parts {
		if !e.recorded {
			out = append(out, e.b)
		}
	}
	return out
}

// Len is the number of partitions behind.
func (s *Behind) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.parts)
}

// List returns the partitions behind, by table and key.
func (s *Behind) List() []wire.BehindPartition {
	s.mu.Lock()
	out := make([]wire.BehindPartition, 0, len(s.parts))
	for _, e := range s.parts {
		out = append(out, e.b)
	}
	s.mu.Unlock()
	slices.SortFunc(out, lost.Compare)
	return out
}

// behind reports a partition that lacks confirmed writes: at ERROR, with
// the way back, once per partition.
func (a *Applier) behind(ctx context.Context, b wire.BehindPartition) {
	b.Found = time.Now().UTC()
	if !a.stats.Behind.Add(b) {
		return
	}
	defer func() {
		if a.record != nil {
			a.record(ctx, b)
		}
	}()
	a.log.Error("the store lost confirmed writes: a partition is behind the journal; rebuild it from the journal (docs/operating.md, \"When the store lost writes\")",
		LogTable, b.Table, LogPK, b.PK, "table_seq", b.TableSeq, "applied_seq", b.AppliedSeq, LogCmd, b.Cmd,
		"repair", fmt.Sprintf("replay rebuild --table %s --pk %q", b.Table, b.PK))
}

// behindCheckTimeout bounds one check of a shard; behindWalk bounds the
// journal messages of one partition looked at past its fence.
const (
	behindCheckTimeout = 2 * time.Minute
	behindWalk         = 64
	behindWorkers      = 8
)

// checkShardBehind looks for partitions of shard behind what was applied
// (see Behind) and reports each. It returns how many partitions it looked
// at; an error only when it could not finish.
//
// Only commands this projector's consumer of the shard has acknowledged
// are looked at: those are never delivered again, so a store that lost
// them stays behind. One not acknowledged yet comes again and is applied
// again (the fence is before it). The bound also keeps the check to this
// projector's own work: the outcomes stream is shared by every projector
// of the journal, and a projector of another durable name filling another
// store (a second region, a rebuild) finds outcomes of commands its store
// has not seen yet.
func (p *Projector) checkShardBehind(ctx context.Context, shard int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, behindCheckTimeout)
	defer cancel()
	s, err := p.js.Stream(ctx, p.j.Name())
	if err != nil {
		return 0, err
	}
	acked, err := p.ackedFloor(ctx, s, shard)
	if err != nil || acked == 0 {
		return 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(wire.ShardFilter(shard)))
	if err != nil {
		return 0, fmt.Errorf("partitions of shard %d: %w", shard, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(behindWorkers)
	for subj := range info.State.Subjects {
		g.Go(func() error { return p.checkPartitionBehind(gctx, s, subj, acked) })
	}
	return len(info.State.Subjects), g.Wait()
}

// ackedFloor is the journal sequence up to which this projector's consumer
// of shard has acknowledged every message; 0 when it has none.
func (p *Projector) ackedFloor(ctx context.Context, s jetstream.Stream, shard int) (uint64, error) {
	a, err := journal.AppliedThrough(ctx, s, p.cfg.Durable, shard)
	if err != nil {
		return 0, fmt.Errorf("shard %d: %w", shard, err)
	}
	return a.Through, nil
}

// checkPartitionBehind checks the partition of journal subject subj: its
// fence against its newest command up to acked, and if older, the outcomes
// of the commands after the fence.
func (p *Projector) checkPartitionBehind(ctx context.Context, s jetstream.Stream, subj string, acked uint64) error {
	table, _, pk, err := wire.ParseJournalSubject(subj)
	if err != nil {
		return nil // not a command's subject: never applied
	}
	last, err := s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("last command of %s/%q: %w", table, pk, err)
	}
	upTo := min(last.Sequence, acked)
	// The fence is read after the newest message: a command up to it that
	// applied before now moved the fence to it or past it.
	tl, err := p.applier.tableLayout(ctx, table)
	if err != nil {
		return err
	}
	f, err := p.applier.readFence(ctx, tl.rows, pk)
	if err != nil || f.Seq >= upTo {
		return err
	}
	reader := outcomes.NewReader(p.js)
	for seq, n := f.Seq+1, 0; seq <= upTo && n < behindWalk; n++ {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && m.Sequence > upTo) {
			return nil
		} else if err != nil {
			return fmt.Errorf("command %d of %s/%q: %w", seq, table, pk, err)
		}
		seq = m.Sequence + 1
		id := m.Header.Get(jetstream.MsgIDHeader)
		o, err := reader.Latest(ctx, id)
		switch {
		case errors.Is(err, journal.ErrNotFound):
			return nil // not handled yet (or its outcome aged out)
		case err != nil:
			return err
		case o.Seq != m.Sequence || o.Status != wire.StatusApplied || len(o.Rows) == 0:
			continue // wrote nothing, or decided by another message of its ID
		}
		// It applied and wrote: the fence must be at it now, unless the
		// store lost it. (It may have committed after the fence was read.)
		if f, err = p.applier.readFence(ctx, tl.rows, pk); err != nil || f.Seq >= m.Sequence {
			return err
		}
		p.stats.Disagreements.Add(1)
		p.applier.behind(ctx, wire.BehindPartition{Table: table, PK: pk, TableSeq: f.Seq, AppliedSeq: m.Sequence, Cmd: id})
		return nil
	}
	return nil
}

// checkBehind runs checkShardBehind on shard and logs what it did; true
// when it finished.
func (p *Projector) checkBehind(ctx context.Context, shard int, why string) bool {
	start := time.Now()
	before := p.stats.Behind.Len()
	n, err := p.checkShardBehind(ctx, shard)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("checking the store against the journal failed", LogShard, shard, "why", why, "err", err)
		}
		return false
	}
	p.log.Debug("store checked against the journal", LogShard, shard, "why", why, "partitions", n,
		"behind", p.stats.Behind.Len()-before, "in", time.Since(start).Round(time.Millisecond))
	return true
}

// recheckOwned checks every shard this instance applies now again, in
// the background (the store answered again after an outage).
func (p *Projector) recheckOwned(ctx context.Context) {
	p.ownedMu.Lock()
	shards := make([]int, 0, len(p.owned))
	for sh := range p.owned {
		shards = append(shards, sh)
	}
	p.ownedMu.Unlock()
	for _, sh := range shards {
		p.checkBehind(ctx, sh, "the store answers again after an outage")
	}
}

// running records that shard is applied by this instance (or no longer).
func (p *Projector) running(shard int, on bool) {
	p.ownedMu.Lock()
	defer p.ownedMu.Unlock()
	if p.owned == nil {
		p.owned = make(map[int]bool)
	}
	if on {
		p.owned[shard] = true
	} else {
		delete(p.owned, shard)
	}
}

// recordTimeout bounds one write of the record; recordRetry is how often
// partitions not yet recorded are tried again; loadTimeout bounds the
// wait for the record at start.
const (
	recordTimeout = 5 * time.Second
	recordRetry   = 5 * time.Second
	loadTimeout   = 30 * time.Second
)

// recordBehind writes a partition found behind to the durable record. A
// failure is retried by followRecord.
func (p *Projector) recordBehind(ctx context.Context, b wire.BehindPartition) {
	b.Instance = p.instanceID()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := p.record.Add(rctx, b); err != nil {
		p.log.Warn("recording a partition behind failed; retrying", LogTable, b.Table, LogPK, b.PK, "err", err)
		return
	}
	p.stats.Behind.put(wire.BehindKey(b.Table, b.PK), b, true)
}

func (p *Projector) instanceID() string {
	if p.group != nil {
		return p.group.ID()
	}
	return p.cfg.InstanceID
}

// followRecord mirrors the durable record into Stats.Behind until ctx
// ends: its entries now (then loaded is closed), and every entry added or
// removed since (by this instance, another replica, or a rebuild). It
// writes the partitions found here whose write failed again every
// recordRetry.
func (p *Projector) followRecord(ctx context.Context, loaded chan<- struct{}) {
	var once sync.Once
	first := true
	onLoaded := func() {
		once.Do(func() { close(loaded) })
		if first {
			first = false
			if n := p.stats.Behind.Len(); n > 0 {
				p.log.Error("partitions are recorded behind the journal: the store lost confirmed writes; rebuild them from the journal (docs/operating.md, \"When the store lost writes\")",
					"partitions", n, "record", p.record.Name(), "repair", "replay rebuild --behind")
			}
		}
	}
	apply := func(e lost.Entry, deleted bool) {
		switch {
		case deleted:
			p.stats.Behind.remove(e.Key)
			if !first {
				p.resumeAll() // removed now, and it may have been held: projector resume
			}
		case e.Held():
			// Held partitions are the shards' (held.go), not behind.
		default:
			p.stats.Behind.put(e.Key, e.BehindPartition, true)
		}
	}
	var retrying sync.WaitGroup
	defer retrying.Wait()
	retrying.Add(1)
	go func() {
		defer retrying.Done()
		t := time.NewTicker(recordRetry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, b := range p.stats.Behind.unrecorded() {
				p.recordBehind(ctx, b)
			}
		}
	}()
	for ctx.Err() == nil {
		err := p.record.Watch(ctx, apply, onLoaded)
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("following the record of partitions behind failed; trying again", "record", p.record.Name(), "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(recordRetry):
		}
	}
}

// awaitRecord waits until the record is loaded, so that partitions
// recorded before are known before a shard starts (and not reported as
// found again); past loadTimeout the shards start anyway.
func (p *Projector) awaitRecord(ctx context.Context, loaded <-chan struct{}) {
	t := time.NewTimer(loadTimeout)
	defer t.Stop()
	select {
	case <-loaded:
	case <-ctx.Done():
	case <-t.C:
		p.log.Warn("the record of partitions behind is not loaded yet; starting the shards", "record", p.record.Name())
	}
}
