package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/tablejournal/tablejournal/store"
)

// Rendezvous wraps a real store and holds each read (Get and Query) until N
// reads are held, or rendezvousWait has passed since the first of them came:
// reads made at once pass together, as one round trip, and a read made
// after another returned starts a round trip of its own. RoundTrips counts
// them, which makes "these reads go out at once" testable without timing a
// store: a latency no local server adds on demand. Writes pass at once.
type Rendezvous struct {
	store.Store
	N int

	mu     sync.Mutex
	group  chan struct{} // the round trip being gathered, if any
	held   int
	groups int
}

var _ store.Store = (*Rendezvous)(nil)

// RoundTrips returns the number of round trips of reads so far.
func (r *Rendezvous) RoundTrips() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.groups
}

// rendezvousWait is how long a read waits for the others of its round
// trip: long enough that reads made at once meet on a loaded machine (it
// is what a read made alone costs a test).
const rendezvousWait = 3 * time.Second

func (r *Rendezvous) meet() {
	r.mu.Lock()
	if r.group == nil {
		r.group, r.held = make(chan struct{}), 0
		r.groups++
	}
	g := r.group
	r.held++
	if r.held >= r.N {
		close(g)
		r.group = nil
	}
	r.mu.Unlock()
	t := time.NewTimer(rendezvousWait)
	defer t.Stop()
	select {
	case <-g:
	case <-t.C:
		r.mu.Lock()
		if r.group == g {
			close(g)
			r.group = nil
		}
		r.mu.Unlock()
	}
}

// Get holds the read until its round trip is gathered.
func (r *Rendezvous) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	r.meet()
	return r.Store.Get(ctx, table, pk, rk)
}

// Query holds the read until its round trip is gathered.
func (r *Rendezvous) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	r.meet()
	return r.Store.Query(ctx, table, q)
}
