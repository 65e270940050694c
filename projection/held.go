package projection

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/wire"
)

// A held partition (SPEC §5, "A held partition") is one whose table holds
// a row the projector did not write where the layout expects its own (a
// fence, tip or version row key without the projector's columns, written
// by another program): its commands cannot be decided, and they are not
// the user's fault. The partition is held: from its first command not
// applied on, its commands are kept by its shard, neither applied nor
// given an outcome, and the shard's cumulative acknowledgement stays
// below the first of them; every other partition, of the shard too, goes
// on. The shard tries the held partition again on a slow backoff
// (heldRetryMin doubling to heldRetryMax) and at once when asked
// (Projector.Resume, `projector resume`); once the row is dealt with its
// commands apply in journal order, and the shard acknowledges again.
//
// Exactly once: nothing past the held command is acknowledged, so a
// restart, a handoff or lost deliveries (the consumer reset to the ack
// floor) deliver the held commands again, and with them the later
// commands of other partitions, which their fences skip as after a crash
// (docs/ARCHITECTURE.md, "Exactly once", stage 3). A shard that resets
// its consumer while holding resets it to the first held command and
// forgets what it held: the redelivery holds the partition again if its
// row is still there. The bound: the consumer delivers at most
// MaxAckPending (2 × FetchBatch) messages past its ack floor, so a shard
// holding a partition applies up to that many messages of its other
// partitions and then waits for the hold to end.

// heldRetryMin and heldRetryMax bound the wait between two tries of a
// held partition.
var (
	heldRetryMin = 30 * time.Second
	heldRetryMax = 10 * time.Minute
)

// Held is the set of partitions held (see HeldError) by this instance's
// shards, for metrics and the status.
type Held struct {
	mu    sync.Mutex
	parts map[string]HeldError // by wire.BehindKey
}

func (h *Held) put(e *HeldError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.parts == nil {
		h.parts = make(map[string]HeldError)
	}
	h.parts[wire.BehindKey(e.Table, e.PK)] = *e
}

func (h *Held) remove(table, pk string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.parts, wire.BehindKey(table, pk))
}

// Len is the number of partitions held.
func (h *Held) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.parts)
}

// List returns the partitions held, by table, key and sequence.
func (h *Held) List() []HeldError {
	h.mu.Lock()
	out := make([]HeldError, 0, len(h.parts))
	for _, e := range h.parts {
		out = append(out, e)
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b HeldError) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.PK, b.PK), cmp.Compare(a.Seq, b.Seq))
	})
	return out
}

// heldPart is a partition a shard holds: why, its messages from the held
// one on in journal order, and when it is tried again.
type heldPart struct {
	err  *HeldError
	msgs []jetstream.Msg
	wait time.Duration
	next time.Time
}

// shardHolds are the partitions one shard holds.
type shardHolds struct {
	parts map[partition]*heldPart
	// lastMsg is the newest message the shard took; ack acknowledges it
	// once nothing is held.
	lastMsg jetstream.Msg
}

// floor is the sequence of the first message held, 0 when none is.
func (h *shardHolds) floor() uint64 {
	var f uint64
	for _, hp := range h.parts {
		if f == 0 || hp.err.Seq < f {
			f = hp.err.Seq
		}
	}
	return f
}

// partitionOf is the partition of a journal message, as decode groups it.
func partitionOf(m jetstream.Msg) partition {
	table, _, pk, err := wire.ParseJournalSubject(m.Subject())
	if err != nil {
		return partition{"", m.Subject()}
	}
	return partition{wire.TableToken(table), pk}
}

func msgSeq(m jetstream.Msg) uint64 {
	md, err := m.Metadata()
	if err != nil {
		return 0
	}
	return md.Sequence.Stream
}

// take splits a batch: the messages of partitions held are kept with
// them; the rest is returned to be applied.
func (h *shardHolds) take(msgs []jetstream.Msg) []jetstream.Msg {
	if len(h.parts) == 0 {
		return msgs
	}
	todo := msgs[:0:0]
	for _, m := range msgs {
		if hp, ok := h.parts[partitionOf(m)]; ok {
			hp.msgs = append(hp.msgs, m)
			continue
		}
		todo = append(todo, m)
	}
	return todo
}

// hold starts holding the partitions of found, with their messages of
// msgs from the held one on, and reports each.
func (s *shardRun) hold(found []*HeldError, msgs []jetstream.Msg) {
	for _, he := range found {
		part := partition{he.Table, he.PK}
		hp := s.holds.parts[part]
		if hp == nil {
			hp = &heldPart{wait: heldRetryMin}
			if s.holds.parts == nil {
				s.holds.parts = make(map[partition]*heldPart)
			}
			s.holds.parts[part] = hp
		} else {
			hp.wait = min(2*hp.wait, heldRetryMax)
		}
		hp.err, hp.next = he, time.Now().Add(hp.wait)
		var kept []jetstream.Msg
		for _, m := range msgs {
			if partitionOf(m) == part && msgSeq(m) >= he.Seq {
				kept = append(kept, m)
			}
		}
		hp.msgs = kept // msgs holds all the partition's messages: a new hold's batch, or a retry's held ones
		s.p.stats.Held.put(he)
		go s.p.recordHeld(he)
		s.p.log.Error("a row the projector did not write holds a partition: its commands wait, the others go on; deal with the row, then resume it (docs/operating.md, \"A held partition\")",
			LogShard, s.shard, LogTable, he.Table, LogPK, he.PK, LogSeq, he.Seq, LogCmd, he.Cmd, "row", he.Key,
			"held", len(hp.msgs), "retry_in", hp.wait, "resume", fmt.Sprintf("projector resume --table %s --pk %q", he.Table, he.PK), "err", he.Err)
	}
}

// ack acknowledges what the shard has applied (stage 8): everything when
// nothing is held, else up to the last message of msgs before the first
// held one. The consumer acknowledges cumulatively: the message acked
// stands for all before it. A lost ack means a redelivery, which the rows'
// _seq skip.
func (s *shardRun) ack(msgs []jetstream.Msg) {
	if len(msgs) > 0 {
		s.holds.lastMsg = msgs[len(msgs)-1]
	}
	floor := s.holds.floor()
	if floor == 0 {
		if s.holds.lastMsg != nil {
			_ = s.holds.lastMsg.Ack()
		}
		return
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgSeq(msgs[i]) < floor {
			_ = msgs[i].Ack()
			return
		}
	}
}

// retryHeld tries the held partitions that are due (all of them when now
// is set) again, each as a batch of its held messages; a partition that
// applies is no longer held. It returns an error only when the shard must
// stop (a store failure).
func (s *shardRun) retryHeld(ctx context.Context, now bool) error {
	released := false
	for part, hp := range s.holds.parts {
		if !now && time.Now().Before(hp.next) {
			continue
		}
		held, err := s.p.processRetrying(ctx, s.shard, hp.msgs)
		if errors.Is(err, errAbandoned) || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if len(held) > 0 {
			s.hold(held, hp.msgs)
			continue
		}
		delete(s.holds.parts, part)
		s.p.stats.Held.remove(part.table, part.pk)
		go s.p.unrecordHeld(part.table, part.pk)
		released = true
		s.p.log.Info("a held partition applies again", LogShard, s.shard, LogTable, part.table, LogPK, part.pk,
			LogSeq, hp.err.Seq, LogCmd, hp.err.Cmd, "applied", len(hp.msgs))
	}
	if released {
		s.ack(nil)
	}
	return nil
}

// heldDue reports whether a held partition is due to be tried again.
func (h *shardHolds) heldDue() bool {
	for _, hp := range h.parts {
		if !time.Now().Before(hp.next) {
			return true
		}
	}
	return false
}

// forgetHolds drops what the shard holds from the instance's Stats.Held:
// the shard stops here (handed off, or the projector stops).
func (s *shardRun) forgetHolds() {
	for part := range s.holds.parts {
		s.p.stats.Held.remove(part.table, part.pk)
	}
	s.holds.parts = nil
}

// reopenFrom is where a consumer reset while holding starts: at the first
// held message, its holds forgotten (see the comment at the top); else at
// from.
func (s *shardRun) reopenFrom(from uint64) uint64 {
	f := s.holds.floor()
	if f == 0 || (from != 0 && from < f) {
		return from
	}
	s.forgetHolds()
	s.last = f - 1
	return f
}

// Resume asks every shard of this instance that holds table's partition
// pk (every held partition of table when pk is "", every held partition
// when table is "" too) to try it again now. It returns how many
// partitions it asked for.
func (p *Projector) Resume(table, pk string) int {
	n := 0
	for _, he := range p.stats.Held.List() {
		if (table == "" || he.Table == wire.TableToken(table)) && (pk == "" || he.PK == pk) {
			n++
		}
	}
	if n > 0 {
		p.resumeAll()
	}
	return n
}

// resumeAsked reports whether Resume was called since gen, and the
// generation now.
func (p *Projector) resumeAsked(gen uint64) (bool, uint64) {
	p.resumeMu.Lock()
	defer p.resumeMu.Unlock()
	return p.resumeGen != gen, p.resumeGen
}

// recordHeld writes a held partition to the durable record (package
// lost, with wire.ReasonForeignRow), where projector status and the
// console find it; an entry there already (found behind, or held before)
// is kept. Holding does not depend on it: a restart finds the row again.
func (p *Projector) recordHeld(he *HeldError) {
	if p.record == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	b := wire.BehindPartition{Table: he.Table, PK: he.PK, AppliedSeq: he.Seq, Cmd: he.Cmd, Found: time.Now().UTC(),
		Instance: p.instanceID(), Reason: wire.ReasonForeignRow, Row: he.Key}
	if err := p.record.Add(ctx, b); err != nil {
		p.log.Warn("recording a held partition failed", LogTable, he.Table, LogPK, he.PK, "err", err)
	}
}

// unrecordHeld removes the held entry of a partition that applies again.
func (p *Projector) unrecordHeld(table, pk string) {
	if p.record == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	es, err := p.record.List(ctx, table)
	for _, e := range es {
		if err == nil && e.Held() && e.PK == pk {
			_, err = p.record.Remove(ctx, table, pk, e.Revision)
		}
	}
	if err != nil {
		p.log.Warn("removing a held partition from the record failed", LogTable, table, LogPK, pk, "err", err)
	}
}

// resumeAll has every shard try its held partitions now: a held entry
// left the record (projector resume).
func (p *Projector) resumeAll() {
	p.resumeMu.Lock()
	p.resumeGen++
	p.resumeMu.Unlock()
}
