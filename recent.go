package tablejournal

import (
	"sync"

	"github.com/tablejournal/tablejournal/journal/outcomes"
)

// recentCap is how many publishes recentIDs remembers.
const recentCap = 4096

// recentIDs maps the journal sequences of a Client's latest publishes to
// their command IDs, so that a read after its own write (AfterSeq) knows
// the ID whose outcome it waits for without reading the journal.
type recentIDs struct {
	mu   sync.Mutex
	ids  map[uint64]string
	ring []uint64 // sequences in the order added; the oldest is forgotten first
	next int
}

func (r *recentIDs) add(seq uint64, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = make(map[uint64]string, recentCap)
		r.ring = make([]uint64, recentCap)
	}
	if _, ok := r.ids[seq]; ok {
		return
	}
	delete(r.ids, r.ring[r.next])
	r.ring[r.next] = seq
	r.next = (r.next + 1) % recentCap
	r.ids[seq] = id
}

func (r *recentIDs) get(seq uint64) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.ids[seq]
	return id, ok
}

// watchCap is how many of a Client's latest publishes keep their outcome
// watch for a read after the write.
const watchCap = 256

// recentWatches keeps the outcome watch of each of a Client's latest
// publishes (at most watchCap), started before the command was published:
// a read after that write (AfterSeq, WaitApplied) takes it and learns the
// outcome the moment it comes, the projector's reply too, which a watch
// started after Publish returned may have missed (it then waits for the
// stored outcome). The oldest is stopped when a new one comes.
type recentWatches struct {
	mu   sync.Mutex
	byID map[uint64]keptWatch
	ring []uint64
	next int
}

// keptWatch is the watch of the command id.
type keptWatch struct {
	id string
	w  *outcomes.Watch
}

// keep holds w, the watch of command id, published and stored at seq.
func (r *recentWatches) keep(seq uint64, id string, w *outcomes.Watch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = make(map[uint64]keptWatch, watchCap)
		r.ring = make([]uint64, watchCap)
	}
	if old, ok := r.byID[seq]; ok {
		old.w.Stop()
	}
	if old, ok := r.byID[r.ring[r.next]]; ok {
		old.w.Stop()
		delete(r.byID, r.ring[r.next])
	}
	r.ring[r.next] = seq
	r.next = (r.next + 1) % watchCap
	r.byID[seq] = keptWatch{id, w}
}

// take returns the watch kept for command id at seq, and forgets it: the
// caller stops it. Nil when there is none.
func (r *recentWatches) take(seq uint64, id string) *outcomes.Watch {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.byID[seq]
	if !ok || k.id != id {
		return nil
	}
	delete(r.byID, seq)
	return k.w
}

// stopAll stops every watch kept.
func (r *recentWatches) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for seq, k := range r.byID {
		k.w.Stop()
		delete(r.byID, seq)
	}
}
