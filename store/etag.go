package store

import "context"

// ETagTransactor is implemented by stores whose transactions report the
// etag each operation left, so that a caller can make its next write
// conditional on what it just wrote without reading it back: store/azure
// (the $batch response carries an ETag per operation), and wrappers that
// pass it on. It is optional: a caller that finds a Store without it, or
// gets no etag for an op, reads the entity again.
type ETagTransactor interface {
	// TransactETags is Transact, returning on success one etag per op, in
	// op order: the etag of the entity the op wrote, "" for a Delete or
	// when the store did not report it; nil when it reported none.
	TransactETags(ctx context.Context, table, pk string, ops []Op) ([]string, error)
}

// TransactETags runs a transaction on s, returning the etags of what it
// wrote when s reports them (ETagTransactor), else nil.
func TransactETags(ctx context.Context, s Store, table, pk string, ops []Op) ([]string, error) {
	if et, ok := s.(ETagTransactor); ok {
		return et.TransactETags(ctx, table, pk, ops)
	}
	return nil, s.Transact(ctx, table, pk, ops)
}
