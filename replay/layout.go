package replay

import (
	"context"
	"errors"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Layout returns table's layout (SPEC §3, the layout setting): from the
// journal; without a journal, or for a table the journal has no setting
// for (a copy of a plain table made by load or rebuild --into has no
// commands of its own), plain when the store holds the table's history
// table (wire.HistoryTable) and the table no tip row, else versioned. A
// plain answer is remembered: a layout never changes.
func (r *Source) Layout(ctx context.Context, table string) (wire.Layout, error) {
	if _, ok := r.plain.Load(table); ok {
		return wire.LayoutPlain, nil
	}
	l, err := r.layout(ctx, table)
	if err == nil && l == wire.LayoutPlain {
		r.plain.Store(table, true)
	}
	return l, err
}

func (r *Source) layout(ctx context.Context, table string) (wire.Layout, error) {
	if r.j != nil {
		tl, err := r.j.Layout(ctx, table)
		if err != nil || tl.Layout == wire.LayoutPlain || tl.Seq != 0 || tl.Ignored != "" {
			return tl.Layout, err
		}
		// No setting: a versioned table, or a copy of a plain one that
		// has no commands of its own (snapshot load, rebuild --into).
		return r.storeLayout(ctx, table, true)
	}
	return r.storeLayout(ctx, table, false)
}

// storeLayout is table's layout as the store shows it: plain when the
// store holds its history table, and, when tips is set, table itself has
// no tip row (a versioned table with rows always has one, so a table of
// the user's own that happens to be named like its history is not taken
// for it).
func (r *Source) storeLayout(ctx context.Context, table string, tips bool) (wire.Layout, error) {
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
	if tips {
		from, to := rows.TipRange()
		_, ok, err := store.First(ctx, r.st, table, store.Query{AllPartitions: true, From: from, To: to, Limit: 1})
		switch {
		case err != nil && !errors.Is(err, store.ErrTableNotFound):
			return "", err
		case ok:
			return wire.LayoutVersioned, nil
		}
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
