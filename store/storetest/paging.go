package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/internal/pagetoken"
)

// Paging wraps a real store so that its queries page the way Azure Tables
// does, for the tests of every reader: a page holds at most 1,000 entities
// (or the query's Limit); one request examines at most Budget entities of
// the key range, matching the filter itself, and then answers what it has
// matched so far — possibly nothing — with a continuation token, as Azure
// does when a query reaches its five seconds ("it is possible for a query to
// return no results but to still return a continuation header"). With
// EmptyEvery or EmptyFirst set, some pages are empty with a continuation
// whatever the range holds, so that every reader meets empty pages.
//
// The inner store must answer in key order: to shuffle pages as well, wrap
// Shuffle around Paging, not Paging around Shuffle.
//
// The continuation names the last key examined and the inner store's page
// it is on, so a page resumes exactly after it even when rows were written
// in between, like Azure's NextPartitionKey/NextRowKey. Gets and
// transactions go to the inner store unchanged, and so does the listing of
// partitions. Requests counts every Get, Query and Transact that reaches
// the store, for tests that bound what a read costs.
type Paging struct {
	store.Store
	// Budget is the number of entities one query request examines before
	// it answers. If zero, 1,000.
	Budget int
	// EmptyEvery, if 2 or more, makes every EmptyEvery-th query answer an
	// empty page with a continuation (after checking that the table
	// exists), before examining anything.
	EmptyEvery int
	// EmptyFirst makes the first page of every query (one without a
	// continuation) empty, with a continuation to the start: a reader that
	// reads only the first page misses everything.
	EmptyFirst bool

	requests, queries, empty atomic.Int64
}

var _ store.Store = (*Paging)(nil)

// Requests returns the number of Get, Query and Transact calls so far.
func (p *Paging) Requests() int64 { return p.requests.Load() }

// EmptyPages returns the number of empty pages answered with a
// continuation so far.
func (p *Paging) EmptyPages() int64 { return p.empty.Load() }

// Get reads through to the inner store.
func (p *Paging) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	p.requests.Add(1)
	return p.Store.Get(ctx, table, pk, rk)
}

// Transact writes through to the inner store, passing on the etags it
// reports.
func (p *Paging) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	p.requests.Add(1)
	return p.Store.Transact(ctx, table, pk, ops)
}

// pagingPos is where a query resumes: the inner store's page Inner starts,
// after the key (PK, RK) when After is set.
type pagingPos struct {
	Inner  string `json:"i,omitempty"`
	After  bool   `json:"a,omitempty"`
	PK, RK string
}

func (pos pagingPos) token() string { return pagetoken.Encode(pos) }

func parsePos(tok string) (pagingPos, error) {
	var pos pagingPos
	if err := pagetoken.Decode(tok, &pos); err != nil {
		return pos, fmt.Errorf("continuation token %q: %w", tok, store.ErrInvalid)
	}
	return pos, nil
}

// examined reports whether e is at or before the position's key.
func (pos pagingPos) examined(e store.Entity) bool {
	if !pos.After {
		return false
	}
	if c := store.CompareKeys(e.PK, pos.PK); c != 0 {
		return c < 0
	}
	return store.CompareKeys(e.RK, pos.RK) <= 0
}

// Query answers one page as Azure would; see Paging.
func (p *Paging) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	p.requests.Add(1)
	n := p.queries.Add(1)
	if err := store.ValidateQuery(q); err != nil {
		return store.Page{}, err
	}
	pos, err := parsePos(q.Continuation)
	if err != nil {
		return store.Page{}, err
	}
	budget := p.Budget
	if budget <= 0 {
		budget = store.DefaultPageSize
	}
	limit := store.PageSize(q.Limit)
	// The inner store's pages: no filter (this wrapper examines every
	// entity itself), at most budget entities, so that a page resumed in
	// its middle is read again at most once.
	inner := store.Query{PK: q.PK, AllPartitions: q.AllPartitions, From: q.From, To: q.To,
		Limit: min(budget, store.DefaultPageSize), Continuation: pos.Inner}
	if p.EmptyFirst && q.Continuation == "" || p.EmptyEvery > 1 && n%int64(p.EmptyEvery) == 0 {
		if _, err := p.Store.Query(ctx, table, inner); err != nil {
			return store.Page{}, err
		}
		p.empty.Add(1)
		return store.Page{Continuation: pos.token()}, nil
	}
	var out []store.Entity
	seen := 0
	for {
		page, err := p.Store.Query(ctx, table, inner)
		if err != nil {
			return store.Page{}, err
		}
		for i, e := range page.Entities {
			if pos.examined(e) {
				continue
			}
			seen++
			if store.MatchFilter(e.Props, q.Filter) {
				out = append(out, e)
			}
			if len(out) < limit && seen < budget {
				continue
			}
			// This request is done: resume after e.
			next := pagingPos{Inner: inner.Continuation, After: true, PK: e.PK, RK: e.RK}
			if i == len(page.Entities)-1 {
				if page.Continuation == "" {
					return p.answer(out, "")
				}
				next = pagingPos{Inner: page.Continuation}
			}
			return p.answer(out, next.token())
		}
		if page.Continuation == "" {
			return p.answer(out, "")
		}
		inner.Continuation, pos = page.Continuation, pagingPos{}
	}
}

func (p *Paging) answer(out []store.Entity, cont string) (store.Page, error) {
	if len(out) == 0 && cont != "" {
		p.empty.Add(1)
	}
	return store.Page{Entities: out, Continuation: cont}, nil
}

// RunPaged runs the conformance suite against newStore's stores wrapped in
// Paging with a small scan budget and empty pages, and checks that the
// suite met empty pages: what every backend must also pass when it pages
// as Azure does.
func RunPaged(t *testing.T, newStore func(t *testing.T) store.Store, q Quirks) {
	var empty atomic.Int64
	t.Cleanup(func() {
		if empty.Load() == 0 {
			t.Error("the paging wrapper answered no empty page: the suite did not meet any")
		}
	})
	Run(t, func(t *testing.T) store.Store {
		p := &Paging{Store: newStore(t), Budget: 25, EmptyEvery: 3}
		t.Cleanup(func() { empty.Add(p.EmptyPages()) })
		return p
	}, q)
}
