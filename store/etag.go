package store

import "context"

// ETagTransactor is implemented by stores whose transactions report the
// etag each operation left, so that a caller can make its next write
// conditional on what it just wrote without reading it back. It is
// optional: a caller that finds a Store without it reads the entity again.
type ETagTransactor interface {
	// TransactETags is Transact, returning on success one etag per op, in
	// op order: the etag of the entity the op wrote, "" for a Delete.
	TransactETags(ctx context.Context, table, pk string, ops []Op) ([]string, error)
}
