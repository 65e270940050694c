package store

import (
	"context"
	"fmt"
	"sort"
)

// All calls fn for every entity that q selects, in (PartitionKey, RowKey)
// order, following continuation tokens until the range is exhausted. It
// starts at q.Continuation (usually ""), so a caller may resume a scan. It
// stops at the first error from the store or from fn and returns it.
//
// Each page is sorted before fn sees it: Cosmos DB for Table answers a
// page's rows in no particular order (docs/cosmos.md), and every reader of
// this module that streams a range relies on key order. Across pages the
// order is the store's: a page resumes after the previous one.
func All(ctx context.Context, s Store, table string, q Query, fn func(Entity) error) error {
	for {
		page, err := s.Query(ctx, table, q)
		if err != nil {
			return err
		}
		SortEntities(page.Entities)
		for _, e := range page.Entities {
			if err := fn(e); err != nil {
				return err
			}
		}
		if page.Continuation == "" {
			return nil
		}
		q.Continuation = page.Continuation
	}
}

// Collect returns every entity that q selects; see All. Meant for small
// ranges and tests: it holds the whole result in memory.
func Collect(ctx context.Context, s Store, table string, q Query) ([]Entity, error) {
	var out []Entity
	err := All(ctx, s, table, q, func(e Entity) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// First returns the first entity q selects in the order the store answers,
// following continuation tokens through empty pages, as Azure may return
// them (a scan that reached its time or entity budget answers what it has,
// possibly nothing). ok is false when the range holds none. It reads pages
// of q.Limit; give Limit 1 for a single row.
//
// On a store that does not sort (Cosmos DB for Table) the entity is any of
// the range: use First to learn whether a range holds a row, Least for the
// row with the least key.
func First(ctx context.Context, s Store, table string, q Query) (e Entity, ok bool, err error) {
	for {
		page, err := s.Query(ctx, table, q)
		if err != nil {
			return Entity{}, false, err
		}
		if len(page.Entities) > 0 {
			return page.Entities[0], true, nil
		}
		if page.Continuation == "" {
			return Entity{}, false, nil
		}
		q.Continuation = page.Continuation
	}
}

// Least returns the entity with the least key among those q selects,
// whatever order the store answers in; ok is false when there is none.
// q must name one partition (ErrInvalid otherwise: a query cannot bound the
// pair of keys); q.Limit and q.Continuation are ignored.
//
// It reads a first page of one row, then the range before the least key
// found so far until that range is empty: on a store that sorts (Azure
// Tables, the embedded store) the first row is the least and the second
// read is of an empty range, two requests when the range holds a row and
// one when it does not. On a store that does not sort, each further read
// of up to a page (1,000 rows) moves the bound below every row it
// returned, so a range of n rows costs at most 2 + n/1,000 requests.
func Least(ctx context.Context, s Store, table string, q Query) (least Entity, ok bool, err error) {
	if q.AllPartitions {
		return Entity{}, false, fmt.Errorf("least entity of every partition: %w", ErrInvalid)
	}
	q.Limit, q.Continuation = 1, ""
	for {
		e, found, err := leastOfPage(ctx, s, table, q)
		if err != nil || !found {
			return least, ok, err
		}
		least, ok = e, true
		if q.From != "" && CompareKeys(e.RK, q.From) <= 0 {
			return least, ok, nil
		}
		q.To, q.Limit = e.RK, 0
	}
}

// leastOfPage returns the least entity of the first page of q that holds
// one, following continuations through empty pages.
func leastOfPage(ctx context.Context, s Store, table string, q Query) (Entity, bool, error) {
	for {
		page, err := s.Query(ctx, table, q)
		if err != nil {
			return Entity{}, false, err
		}
		if len(page.Entities) > 0 {
			SortEntities(page.Entities)
			return page.Entities[0], true, nil
		}
		if page.Continuation == "" {
			return Entity{}, false, nil
		}
		q.Continuation = page.Continuation
	}
}

// SortEntities sorts entities by (PartitionKey, RowKey) in the order of
// CompareKeys.
func SortEntities(ents []Entity) {
	sort.Slice(ents, func(i, j int) bool { return CompareEntities(ents[i], ents[j]) < 0 })
}

// CompareEntities compares two entities by their keys, partition first, as
// CompareKeys does.
func CompareEntities(a, b Entity) int {
	if c := CompareKeys(a.PK, b.PK); c != 0 {
		return c
	}
	return CompareKeys(a.RK, b.RK)
}
