package rows

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tablejournal/tablejournal/store"
)

// State is what a writer needs to know of one logical row: its current
// version and its newest version of any kind.
type State struct {
	// Tip is the current version; nil when the row does not exist.
	Tip *Row
	// Latest is the newest version of any kind: Tip when the row exists,
	// else its tombstone; nil when the row never existed.
	Latest *Row
}

// Load reads the state of rows from the table, once: with two range
// queries when there are several, then point reads for the rows the ranges
// did not cover.
func Load(ctx context.Context, s store.Store, table, pk string, missing []string) (map[string]*State, error) {
	state := make(map[string]*State, len(missing))
	if len(missing) >= rangeLoadMin {
		var err error
		if missing, err = loadRanges(ctx, s, table, pk, missing, state); err != nil {
			return nil, err
		}
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		sem      = make(chan struct{}, 8)
	)
	for _, rk := range missing {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			st, err := ReadState(ctx, s, table, pk, rk)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			state[rk] = st
		}()
	}
	wg.Wait()
	return state, firstErr
}

// rangeLoadMin is the number of rows of one partition from which load
// reads them with two range queries instead of point reads per row.
const rangeLoadMin = 2

// loadRanges reads the state of many rows of one partition with two range
// queries: the tips between the least and the greatest row, then, for the
// rows without a tip, the version rows over their histories, of which each
// row's least key is its newest (a deleted row's tombstone). Each query reads one page of a
// bounded size, so rows scattered over a large partition cost at most two
// wasted requests: a tip found is the row's, but what a page lacks is known
// absent only when the page holds the whole range; the rows it cannot settle
// are returned in rest and read one by one.
func loadRanges(ctx context.Context, s store.Store, table, pk string, rks []string, state map[string]*State) (rest []string, err error) {
	limit := min(4*len(rks), store.PageSize(0))
	from, to := TipKey(rks[0]), TipKey(rks[0])
	for _, rk := range rks {
		from = minKey(from, TipKey(rk))
		to = maxKey(to, TipKey(rk))
	}
	// No key holds a control character, so nothing sorts between a key and
	// the key followed by a space.
	tips, err := queryPage(ctx, s, table, store.Query{PK: pk, From: from, To: to + " ", Limit: limit})
	if err != nil {
		return nil, err
	}
	var tipless []string
	for _, rk := range rks {
		switch r, ok := tips.rows[rk]; {
		case ok:
			state[rk] = &State{Tip: r, Latest: r}
		case tips.complete:
			tipless = append(tipless, rk)
		default:
			rest = append(rest, rk)
		}
	}
	if len(tipless) == 0 {
		return rest, nil
	}
	from, to = HistoryRange(tipless[0])
	for _, rk := range tipless {
		f, t := HistoryRange(rk)
		from, to = minKey(from, f), maxKey(to, t)
	}
	// No filter on _deleted: the store would read the histories of the
	// live rows in the range anyway, all of them, to find the few matches;
	// unfiltered, the bounded page stops it and the rest is read per row.
	tombs, err := queryPage(ctx, s, table, store.Query{PK: pk, From: from, To: to, Limit: limit})
	if err != nil {
		return nil, err
	}
	for _, rk := range tipless {
		switch r, ok := tombs.rows[rk]; {
		case !tombs.complete:
			rest = append(rest, rk)
		case ok: // the least key of a row's versions is its newest
			state[rk] = &State{Latest: r}
		default:
			state[rk] = &State{}
		}
	}
	return rest, nil
}

// rowPage is one page of rows read by loadRanges: the row with the least
// key of each natural RowKey, and whether the page holds the whole range.
// A page that does not is no proof that a row it lacks is absent, nor that
// the versions it holds of a row are the newest: Cosmos DB for Table
// answers a page with any rows of the range (docs/cosmos.md).
type rowPage struct {
	rows     map[string]*Row
	complete bool
}

func queryPage(ctx context.Context, s store.Store, table string, q store.Query) (rowPage, error) {
	page, err := s.Query(ctx, table, q)
	switch {
	case errors.Is(err, store.ErrTableNotFound):
		return rowPage{rows: map[string]*Row{}}, nil
	case err != nil:
		return rowPage{}, fmt.Errorf("read rows %s/%q: %w", table, q.PK, err)
	}
	p := rowPage{rows: make(map[string]*Row, len(page.Entities)), complete: page.Continuation == ""}
	store.SortEntities(page.Entities)
	for _, e := range page.Entities {
		r, err := DecodeRow(e)
		if err != nil {
			return rowPage{}, err
		}
		if _, seen := p.rows[r.RK]; !seen {
			p.rows[r.RK] = &r
		}
	}
	return p, nil
}

func minKey(a, b string) string {
	if store.CompareKeys(a, b) <= 0 {
		return a
	}
	return b
}

func maxKey(a, b string) string {
	if store.CompareKeys(a, b) >= 0 {
		return a
	}
	return b
}

// ReadState reads what the apply needs to know of one row: the tip, and
// when there is none, the newest version row. The tip and the first page
// of the row's history are read at once, so a row that exists or never
// existed costs one round trip (two requests), and a deleted row one
// more: the request that proves no version sorts before the one found
// (store.Least).
func ReadState(ctx context.Context, s store.Store, table, pk, rk string) (*State, error) {
	st, err := readState(ctx, s, table, pk, rk)
	if err != nil {
		return nil, fmt.Errorf("read row %s/%q/%q: %w", table, pk, rk, err)
	}
	return st, nil
}

func readState(ctx context.Context, s store.Store, table, pk, rk string) (*State, error) {
	from, to := HistoryRange(rk)
	var (
		hist    store.Page
		histErr error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		hist, histErr = s.Query(ctx, table, store.Query{PK: pk, From: from, To: to, Limit: 1})
	}()
	e, err := s.Get(ctx, table, pk, TipKey(rk))
	<-done
	switch {
	case err == nil:
		r, err := DecodeRow(e)
		if err != nil {
			return nil, err
		}
		return &State{Tip: &r, Latest: &r}, nil
	case errors.Is(err, store.ErrTableNotFound):
		return &State{}, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	case histErr != nil:
		return nil, histErr
	}
	q := store.Query{PK: pk, From: from, To: to}
	if len(hist.Entities) > 0 {
		// The least of the page is a version; the newest is the least of
		// all, so only the range before it is left to read.
		store.SortEntities(hist.Entities)
		q.To = hist.Entities[0].RK
	} else if hist.Continuation == "" {
		return &State{}, nil
	}
	newest, ok, err := store.Least(ctx, s, table, q)
	switch {
	case err != nil:
		return nil, err
	case ok:
	case len(hist.Entities) > 0:
		newest = hist.Entities[0]
	default:
		return &State{}, nil
	}
	r, err := DecodeRow(newest)
	if err != nil {
		return nil, err
	}
	return &State{Latest: &r}, nil
}
