package storetest

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/tablejournal/tablejournal/store"
)

// Shuffle wraps a real store so that every page of a query comes back with
// its rows in a shuffled order, as Cosmos DB for Table answers them ("query
// results returned by the Table API aren't sorted in partition key/row key
// order", MicrosoftDocs/azure-docs#19489): a fault no local server produces
// on demand. The order is reproducible: a page's permutation is drawn from
// Seed and the query that asked for it (table, bounds, filter, limit,
// continuation), so the same query answers the same order every time.
// Everything else, and which rows a page holds, is the inner store's.
type Shuffle struct {
	store.Store
	Seed uint64

	shuffled atomic.Int64
}

var _ store.Store = (*Shuffle)(nil)

// ShuffledPages returns the number of pages answered in an order other
// than the inner store's so far.
func (s *Shuffle) ShuffledPages() int64 { return s.shuffled.Load() }

// Query answers the inner store's page with its rows shuffled.
func (s *Shuffle) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	p, err := s.Store.Query(ctx, table, q)
	if err != nil || len(p.Entities) < 2 {
		return p, err
	}
	h := fnv.New64a()
	for _, part := range []string{table, q.PK, strconv.FormatBool(q.AllPartitions), q.From, q.To, strconv.Itoa(q.Limit), q.Continuation} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	for _, c := range q.Filter {
		h.Write([]byte(c.Prop + "\x00" + strconv.Itoa(int(c.Cmp)) + "\x00" + c.Value.GoString() + "\x00"))
	}
	r := rand.New(rand.NewPCG(s.Seed, h.Sum64()))
	ents := append([]store.Entity(nil), p.Entities...)
	r.Shuffle(len(ents), func(i, j int) { ents[i], ents[j] = ents[j], ents[i] })
	for i := range ents {
		if ents[i].PK != p.Entities[i].PK || ents[i].RK != p.Entities[i].RK {
			s.shuffled.Add(1)
			break
		}
	}
	p.Entities = ents
	return p, nil
}

// RunShuffled runs the conformance suite against newStore's stores wrapped
// in Shuffle, with the quirk PagesUnordered, and checks that the suite met
// shuffled pages: what every backend must also pass when it answers pages
// unsorted, as Cosmos DB for Table does.
func RunShuffled(t *testing.T, newStore func(t *testing.T) store.Store, q Quirks) {
	var shuffled atomic.Int64
	t.Cleanup(func() {
		if shuffled.Load() == 0 {
			t.Error("the shuffling wrapper reordered no page: the suite did not meet any")
		}
	})
	q.PagesUnordered = true
	Run(t, func(t *testing.T) store.Store {
		s := &Shuffle{Store: newStore(t), Seed: 22}
		t.Cleanup(func() { shuffled.Add(s.ShuffledPages()) })
		return s
	}, q)
}
