package replay

import (
	"context"
	"errors"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Layout returns table's layout (SPEC §3, the layout setting): from the
// journal; without one, plain when the store holds the table's history
// table (wire.HistoryTable), else versioned.
func (r *Source) Layout(ctx context.Context, table string) (wire.Layout, error) {
	if r.j != nil {
		tl, err := r.j.Layout(ctx, table)
		return tl.Layout, err
	}
	h, err := wire.HistoryTable(table)
	if err != nil {
		return wire.LayoutVersioned, nil // no valid history name: never plain
	}
	_, err = r.st.Query(ctx, h, store.Query{PK: "", Limit: 1})
	switch {
	case errors.Is(err, store.ErrTableNotFound):
		return wire.LayoutVersioned, nil
	case err != nil:
		return "", err
	}
	return wire.LayoutPlain, nil
}

// VersionTable is the table that holds table's rows in the versioned
// layout of SPEC §4: table itself, or, for a plain table, its history
// table. Every reader of version rows, tips, fences and erase markers
// (as-of, history, blame, undo, restore, verify, diff, snapshot, prune,
// erase) reads the table it returns.
func (r *Source) VersionTable(ctx context.Context, table string) (string, error) {
	l, err := r.Layout(ctx, table)
	if err != nil {
		return "", err
	}
	return rows.VersionTable(table, l)
}
