package projectiontest

import (
	"context"
	"testing"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Layouts are the row layouts of SPEC §4: the projection tests that can
// run on either take one of them as a parameter, like the store.
var Layouts = []wire.Layout{wire.LayoutVersioned, wire.LayoutPlain}

// SetLayout sets table's layout in the harness's journal (SPEC §3), before
// its first command; versioned, the default, needs no setting and gets
// none.
func (h *Harness) SetLayout(ctx context.Context, table string, l wire.Layout) {
	h.t.Helper()
	if l == wire.LayoutVersioned {
		return
	}
	if _, err := tablelayout.Set(ctx, h.Journal, table, l); err != nil {
		h.t.Fatal(err)
	}
}

// VersionTable is the table that holds table's rows in the versioned
// layout when table is laid out as l: itself, or its history table.
func VersionTable(t testing.TB, table string, l wire.Layout) string {
	t.Helper()
	vt, err := rows.VersionTable(table, l)
	if err != nil {
		t.Fatal(err)
	}
	return vt
}

// CheckPlain checks that the plain table holds exactly the tips of its
// history table, every column (rows.ComparePlain).
func CheckPlain(t testing.TB, st store.Store, table string) {
	t.Helper()
	ms, err := PlainMismatches(context.Background(), st, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:min(len(ms), 20)] {
		t.Errorf("plain table %s: %v", table, m)
	}
	if len(ms) > 20 {
		t.Errorf("plain table %s: %d rows differ from the history's tips", table, len(ms))
	}
}

// PlainMismatches is CheckPlain returning what it finds, for polling.
func PlainMismatches(ctx context.Context, st store.Store, table string) ([]rows.PlainMismatch, error) {
	h, err := wire.HistoryTable(table)
	if err != nil {
		return nil, err
	}
	return rows.ComparePlain(ctx, st, table, h, store.AllPartitions)
}
