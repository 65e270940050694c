package store

import "context"

// All calls fn for every entity that q selects, in (PartitionKey, RowKey)
// order, following continuation tokens until the range is exhausted. It
// starts at q.Continuation (usually ""), so a caller may resume a scan. It
// stops at the first error from the store or from fn and returns it.
func All(ctx context.Context, s Store, table string, q Query, fn func(Entity) error) error {
	for {
		page, err := s.Query(ctx, table, q)
		if err != nil {
			return err
		}
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

// First returns the first entity q selects, following continuation tokens
// through empty pages, as Azure may return them (a scan that reached its
// time or entity budget answers what it has, possibly nothing). ok is false
// when the range holds none. It reads pages of q.Limit; give Limit 1 for
// a single row.
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
