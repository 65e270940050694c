package storetest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
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
//
// With Scatter set, a page holds any rows of the range, not the next ones
// in key order: each query reads the whole range from the inner store,
// shuffles it and answers the next page of the shuffled range; the
// continuation is an offset into it. That is the whole of what Cosmos DB
// for Table promises, but it is only sound for a range not written between
// its pages, and costs a read of the range per page.
type Shuffle struct {
	store.Store
	Seed    uint64
	Scatter bool

	shuffled atomic.Int64
}

var _ store.Store = (*Shuffle)(nil)

// ShuffledPages returns the number of pages answered in an order other
// than the inner store's so far.
func (s *Shuffle) ShuffledPages() int64 { return s.shuffled.Load() }

// Query answers the inner store's page with its rows shuffled.
func (s *Shuffle) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	if s.Scatter {
		return s.scatter(ctx, table, q)
	}
	p, err := s.Store.Query(ctx, table, q)
	if err != nil || len(p.Entities) < 2 {
		return p, err
	}
	p.Entities = s.shuffle(table, q, p.Entities)
	return p, nil
}

// scatter answers a page of the whole range, shuffled; see Shuffle.
func (s *Shuffle) scatter(ctx context.Context, table string, q store.Query) (store.Page, error) {
	off := 0
	if q.Continuation != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(q.Continuation, "scatter:"))
		if err != nil || n < 0 || !strings.HasPrefix(q.Continuation, "scatter:") {
			return store.Page{}, fmt.Errorf("continuation token %q: %w", q.Continuation, store.ErrInvalid)
		}
		off = n
	}
	whole := q
	whole.Limit, whole.Continuation = 0, ""
	all, err := store.Collect(ctx, s.Store, table, whole)
	if err != nil {
		return store.Page{}, err
	}
	all = s.shuffle(table, whole, all)
	off = min(off, len(all))
	end := min(off+store.PageSize(q.Limit), len(all))
	p := store.Page{Entities: all[off:end]}
	if end < len(all) {
		p.Continuation = "scatter:" + strconv.Itoa(end)
	}
	return p, nil
}

// shuffle returns ents in an order drawn from Seed and the query.
func (s *Shuffle) shuffle(table string, q store.Query, in []store.Entity) []store.Entity {
	if len(in) < 2 {
		return in
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
	ents := append([]store.Entity(nil), in...)
	r.Shuffle(len(ents), func(i, j int) { ents[i], ents[j] = ents[j], ents[i] })
	for i := range ents {
		if ents[i].PK != in[i].PK || ents[i].RK != in[i].RK {
			s.shuffled.Add(1)
			break
		}
	}
	return ents
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
