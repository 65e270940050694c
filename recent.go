package tablejournal

import (
	"sync"

	"github.com/tablejournal/tablejournal/journal/outcomes"
)

// recentCap is how many publishes recentPublishes remembers.
const recentCap = 4096

// watchCap is how many of a Client's latest publishes keep their outcome
// watch for a read after the write.
const watchCap = 256

// recentPublishes remembers a Client's latest publishes (recentCap) in one
// ring, so that a read after its own write (AfterSeq, WaitApplied, Wait):
//   - knows the command ID whose outcome it waits for, from the journal
//     sequence, without reading the journal;
//   - takes the command's outcome watch, started before the command was
//     published and kept for the latest watchCap publishes only, and learns
//     the outcome the moment it comes, the projector's reply too, which a
//     watch started after Publish returned may have missed (it then waits
//     for the stored outcome). A watch is stopped when its publish falls
//     out of the latest watchCap or another replaces it.
type recentPublishes struct {
	mu    sync.Mutex
	ring  []recentPublish // in the order added; the oldest is forgotten first
	next  int             // where the next publish goes: the oldest
	bySeq map[uint64]int  // a journal sequence's place in ring
}

// recentPublish is the publish of command id, stored at journal sequence
// seq (0: a place in the ring not used yet), and its outcome watch, if kept.
type recentPublish struct {
	seq uint64
	id  string
	w   *outcomes.Watch
}

// add remembers that command id was stored at seq, unless seq is
// remembered already.
func (r *recentPublishes) add(seq uint64, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ring == nil {
		r.ring = make([]recentPublish, recentCap)
		r.bySeq = make(map[uint64]int, recentCap)
	}
	if _, ok := r.bySeq[seq]; ok {
		return
	}
	if old := &r.ring[r.next]; old.seq != 0 {
		stopWatch(old)
		delete(r.bySeq, old.seq)
	}
	// The publish this one pushes out of the latest watchCap.
	stopWatch(&r.ring[(r.next+recentCap-watchCap)%recentCap])
	r.ring[r.next] = recentPublish{seq: seq, id: id}
	r.bySeq[seq] = r.next
	r.next = (r.next + 1) % recentCap
}

// get returns the command ID stored at seq, if remembered.
func (r *recentPublishes) get(seq uint64) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.bySeq[seq]
	if !ok {
		return "", false
	}
	return r.ring[i].id, true
}

// keep holds w, the watch of command id, published and stored at seq (add
// came first), in place of any watch kept for it before. It stops w
// instead when that publish is no longer among the latest watchCap, or is
// not of id.
func (r *recentPublishes) keep(seq uint64, id string, w *outcomes.Watch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.bySeq[seq]
	if !ok || r.ring[i].id != id || (r.next+recentCap-i-1)%recentCap >= watchCap {
		w.Stop()
		return
	}
	stopWatch(&r.ring[i])
	r.ring[i].w = w
}

// take returns the watch kept for command id at seq, and forgets it: the
// caller stops it. Nil when there is none.
func (r *recentPublishes) take(seq uint64, id string) *outcomes.Watch {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.bySeq[seq]
	if !ok || r.ring[i].id != id {
		return nil
	}
	w := r.ring[i].w
	r.ring[i].w = nil
	return w
}

// stopAll stops every watch kept; the command IDs stay.
func (r *recentPublishes) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.ring {
		stopWatch(&r.ring[i])
	}
}

// stopWatch stops p's watch, if kept, and forgets it.
func stopWatch(p *recentPublish) {
	if p.w != nil {
		p.w.Stop()
		p.w = nil
	}
}
