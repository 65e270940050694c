package projection

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/journal"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// rowLayout is how the rows of a partition are stored (SPEC §4): how the
// driver reads them back as row states (load), writes a decided
// transaction as store operations (ops), and what it writes once that
// transaction committed, or was found committed before (mirror). The
// fence, the decision (package decide) and the order of the exactly-once
// path do not depend on it. A table's layout is a fact of the journal
// (ApplierConfig.Layouts), chosen per table when the Applier first meets
// it (tableLayout).
type rowLayout interface {
	load(ctx context.Context, s store.Store, table, pk string, rks []string) (map[string]*rowState, error)
	// prefetch runs beside each load of rows rks from the store: what the
	// layout will read of them after the commit, read now, in the same
	// round trip.
	prefetch(ctx context.Context, a *Applier, part partKey, rks []string)
	ops(b *txn) []store.Op
	// mirror runs after each transaction of a partition committed (or
	// wrote nothing), before its results are handed on (Hooks.AfterCommit)
	// and the batch is acknowledged.
	mirror(ctx context.Context, r *partitionRun) error
}

// versioned is the layout of SPEC §4 (package rows): each logical row is a
// tip row plus version and tombstone rows in the same partition, written
// in one transaction; nothing else to write.
type versioned struct{}

func (versioned) load(ctx context.Context, s store.Store, table, pk string, rks []string) (map[string]*rowState, error) {
	return rows.Load(ctx, s, table, pk, rks)
}

func (versioned) prefetch(context.Context, *Applier, partKey, []string) {}

func (versioned) ops(b *txn) []store.Op { return b.TxOps() }

func (versioned) mirror(context.Context, *partitionRun) error { return nil }

// tableLayout is a table's layout as the driver uses it: the layout, and
// the table that holds the versioned rows and the fences (the table
// itself, or a plain table's history table).
type tableLayout struct {
	layout rowLayout
	rows   string
}

// tableLayout returns table's layout, asked of ApplierConfig.Layouts once
// per table: once a table has a command its layout cannot change (SPEC §3).
func (a *Applier) tableLayout(ctx context.Context, table string) (tableLayout, error) {
	tok := wire.TableToken(table)
	if v, ok := a.tableLayouts.Load(tok); ok {
		return v.(tableLayout), nil
	}
	l := wire.LayoutVersioned
	if a.layouts != nil {
		var err error
		if l, err = a.layouts(ctx, table); err != nil {
			return tableLayout{}, fmt.Errorf("%w: the layout of table %s: %w", ErrPublish, table, err)
		}
	}
	tl := tableLayout{layout: versioned{}, rows: table}
	if l == wire.LayoutPlain {
		h, err := wire.HistoryTable(table)
		if err != nil {
			return tableLayout{}, err
		}
		tl = tableLayout{layout: plain{}, rows: h}
	}
	a.tableLayouts.Store(tok, tl)
	return tl, nil
}

// JournalLayouts is the ApplierConfig.Layouts of a projection of journal
// j: each table's layout as its setting in the journal decides
// (tablelayout.Of, SPEC §3). A setting that does not hold is logged.
func JournalLayouts(j *journal.Journal, log *slog.Logger) func(ctx context.Context, table string) (wire.Layout, error) {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, table string) (wire.Layout, error) {
		tl, err := tablelayout.Of(ctx, j, table)
		if err != nil {
			return "", err
		}
		if tl.Ignored != "" {
			log.Warn("a layout setting of the table does not hold; projecting it versioned", LogTable, table, "why", tl.Ignored)
		}
		return tl.Layout, nil
	}
}
