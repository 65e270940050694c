package replay

import (
	"context"
	"errors"
	"strings"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Layout returns table's layout (SPEC §3, the layout setting): from the
// journal's setting; without a journal, or for a table the journal has no
// setting for (a copy of a plain table made by load or rebuild --into has
// no commands of its own), from the store: plain when it holds the
// table's history table (wire.HistoryTable) and the table no tip row,
// else versioned.
//
// A layout never changes once a table has rows, so an answer is
// remembered once it is settled: a setting, a plain table, a table with a
// tip row. Only a table with no setting and no rows in either layout is
// asked again (a setting may still come before its first command), so
// that a reader of a settled table pays nothing for the resolution.
func (r *Source) Layout(ctx context.Context, table string) (wire.Layout, error) {
	key := strings.ToLower(table)
	if l, ok := r.layouts.Load(key); ok {
		return l.(wire.Layout), nil
	}
	l, settled, err := r.layout(ctx, table)
	if err == nil && settled {
		r.layouts.Store(key, l)
	}
	return l, err
}

func (r *Source) layout(ctx context.Context, table string) (wire.Layout, bool, error) {
	if r.j != nil {
		tl, err := tablelayout.Of(ctx, r.j, table)
		switch {
		case err != nil:
			return "", false, err
		case tl.Layout == wire.LayoutPlain || tl.Seq != 0 || tl.Ignored != "":
			// A setting holds for good; one that came too late never
			// will.
			return tl.Layout, true, nil
		}
		// No setting: a versioned table, or a copy of a plain one.
	}
	return r.storeLayout(ctx, table)
}

// storeLayout is table's layout as the store shows it, and whether it is
// settled: plain when the store holds its history table and table itself
// no tip row (a versioned table with rows always has one, so a table of
// the user's own that happens to be named like a history is not taken for
// one), versioned otherwise.
func (r *Source) storeLayout(ctx context.Context, table string) (wire.Layout, bool, error) {
	h, err := wire.HistoryTable(table)
	if err != nil {
		return wire.LayoutVersioned, true, nil // no valid history name: never plain
	}
	_, err = r.st.Query(ctx, h, store.Query{PK: "", Limit: 1})
	hasHistory := err == nil
	if err != nil && !errors.Is(err, store.ErrTableNotFound) {
		return "", false, err
	}
	from, to := rows.TipRange()
	_, tip, err := store.First(ctx, r.st, table, store.Query{AllPartitions: true, From: from, To: to, Limit: 1})
	switch {
	case err != nil && !errors.Is(err, store.ErrTableNotFound):
		return "", false, err
	case tip:
		return wire.LayoutVersioned, true, nil
	case hasHistory:
		return wire.LayoutPlain, true, nil
	}
	return wire.LayoutVersioned, false, nil
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

// Logical names table in err, an error of a read of its history table
// (VersionTable): a *PrunedError or *ErasedError names the table the user
// asked about, not where its history is kept.
func Logical(err error, table string) error {
	var p *PrunedError
	if errors.As(err, &p) {
		p.Table = table
	}
	var e *ErasedError
	if errors.As(err, &e) {
		e.Table = table
	}
	return err
}
