package projectiontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// layoutOptOuts holds, per test name, what SkipLayoutCheck exempted.
var (
	layoutMu      sync.Mutex
	layoutOptOuts = make(map[string]optOut)
)

type optOut struct {
	all    bool
	tables []string
}

// CheckLayout registers a check of the row layout of SPEC §4 on every
// table of st, run in t.Cleanup (as bbolt checks its invariants after
// every test). It runs after the cleanups registered later (the harness's
// projector has stopped by then), and only when the test has not failed
// already. The backends of this package register it for every store they
// open; a test that deliberately breaks the layout opts out with
// SkipLayoutCheck. Benchmarks are not checked.
func CheckLayout(t testing.TB, st store.Store) {
	if _, ok := t.(*testing.B); ok {
		return
	}
	t.Cleanup(func() {
		skip := optedOut(t.Name())
		if t.Failed() || skip.all {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tables, err := st.ListTables(ctx)
		if err != nil {
			t.Errorf("layout check: list tables: %v", err)
			return
		}
		for _, table := range tables {
			// Table names are case-insensitive: the projector creates a
			// table under its lower-case token (wire.TableToken).
			if slices.ContainsFunc(skip.tables, func(s string) bool { return strings.EqualFold(s, table) }) {
				continue
			}
			if h := plainHistory(table, tables); h != "" {
				// A plain table: exactly its history's tips (the history
				// is checked as a table of the versioned layout).
				ms, err := rows.ComparePlain(ctx, st, table, h, store.AllPartitions)
				if err != nil {
					t.Errorf("layout check of plain table %s: %v", table, err)
				}
				for _, m := range ms[:min(len(ms), 100)] {
					t.Errorf("layout check of plain table %s: %v", table, m)
				}
				continue
			}
			for _, err := range LayoutErrors(ctx, st, table) {
				t.Errorf("layout check of table %s: %v", table, err)
			}
		}
	})
}

// plainHistory is the history table of table among tables when table is
// plain (its history table exists), else "".
func plainHistory(table string, tables []string) string {
	h, err := wire.HistoryTable(table)
	if err != nil {
		return ""
	}
	for _, t := range tables {
		if strings.EqualFold(t, h) {
			return t
		}
	}
	return ""
}

// SkipLayoutCheck exempts the tables named (every table when none is)
// from CheckLayout: for tests that tamper with tables on purpose (verify
// and diff tests, layout tests). It covers the stores opened by t, by the
// tests t is a subtest of (a subtest tampering with its parent's table),
// and by t's subtests.
func SkipLayoutCheck(t testing.TB, tables ...string) {
	layoutMu.Lock()
	defer layoutMu.Unlock()
	o := layoutOptOuts[t.Name()]
	o.all = o.all || len(tables) == 0
	o.tables = append(slices.Clip(o.tables), tables...)
	layoutOptOuts[t.Name()] = o
}

// optedOut returns what SkipLayoutCheck exempted for the check of the
// test named name: its own opt-outs, its subtests' and its parents'.
func optedOut(name string) optOut {
	layoutMu.Lock()
	defer layoutMu.Unlock()
	var o optOut
	for n, x := range layoutOptOuts {
		if n == name || strings.HasPrefix(n, name+"/") || strings.HasPrefix(name, n+"/") {
			o.all = o.all || x.all
			o.tables = append(o.tables, x.tables...)
		}
	}
	return o
}

// LayoutErrors checks table against the layout of SPEC §4 and returns every
// violation (at most a hundred): each row a tip or version row carrying the
// system columns with their types, the versions of a logical row contiguous
// from 0 with _seq rising with _v, at most one tip and it the newest
// version, a tombstone never the tip, the newest version the tip or a
// tombstone (an older tombstone is a delete the row was re-created after:
// SPEC §4 continues a re-insert after the tombstone's version). Fence rows (RowKey
// rows.FenceKey) are the projector's bookkeeping and are skipped.
func LayoutErrors(ctx context.Context, st store.Store, table string) []error {
	var errs []error
	add := func(err error) {
		if len(errs) < 100 {
			errs = append(errs, err)
		}
	}
	type key struct{ pk, rk string }
	byKey := make(map[key][]rows.Row)
	pruned := make(map[string]bool) // partitions with a prune horizon
	err := store.All(ctx, st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
		if e.RK == rows.FenceKey {
			pruned[e.PK] = rows.HorizonOf(e.Props).Seq > 0
			return nil
		}
		if rows.IsErasedKey(e.RK) {
			if _, ok := rows.DecodeMarker(e); !ok || len(e.Props) != 3 {
				add(fmt.Errorf("erase marker %q/%q: not the three system columns of a marker", e.PK, e.RK))
			}
			return nil
		}
		if err := systemColumns(e); err != nil {
			add(err)
			return nil
		}
		r, err := rows.DecodeRow(e)
		if err != nil {
			add(err)
			return nil
		}
		k := key{r.PK, r.RK}
		byKey[k] = append(byKey[k], r)
		return nil
	})
	if err != nil {
		return append(errs, fmt.Errorf("read: %w", err))
	}
	keys := make([]key, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].pk < keys[j].pk || keys[i].pk == keys[j].pk && keys[i].rk < keys[j].rk
	})
	for _, k := range keys {
		if err := rowHistory(byKey[k], pruned[k.pk]); err != nil {
			add(fmt.Errorf("row %q/%q: %w", k.pk, k.rk, err))
		}
	}
	return errs
}

// systemColumns checks that a stored row carries the system columns with
// their types, and _deleted only as true.
func systemColumns(e store.Entity) error {
	want := []struct {
		col string
		typ edm.Type
	}{
		{rows.ColVersion, edm.TypeInt64},
		{rows.ColCmd, edm.TypeString},
		{rows.ColSeq, edm.TypeInt64},
		{rows.ColAt, edm.TypeDateTime},
		{rows.ColOp, edm.TypeString},
	}
	var errs []error
	for _, w := range want {
		v, ok := e.Props[w.col]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("no %s", w.col))
		case v.Type != w.typ:
			errs = append(errs, fmt.Errorf("%s is %s, not %s", w.col, v.Type, w.typ))
		}
	}
	if d, ok := e.Props[rows.ColDeleted]; ok && (d.Type != edm.TypeBoolean || !d.Bool) {
		errs = append(errs, fmt.Errorf("%s is %s %v, not true", rows.ColDeleted, d.Type, d.Bool))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("row %q/%q: %w", e.PK, e.RK, err)
	}
	return nil
}

// rowHistory checks the stored versions of one logical row. Versions run
// contiguous from 0, or in a pruned partition from the oldest kept (a
// prune removes a prefix of every row's history).
func rowHistory(rs []rows.Row, pruned bool) error {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Version < rs[j].Version })
	var from int64
	if pruned && len(rs) > 0 {
		from = rs[0].Version
	}
	var errs []error
	for i, r := range rs {
		newest := i == len(rs)-1
		switch {
		case r.Version != from+int64(i):
			errs = append(errs, fmt.Errorf("versions %v are not contiguous from 0", versions(rs)))
		case i > 0 && r.Seq <= rs[i-1].Seq:
			errs = append(errs, fmt.Errorf("_seq %d at version %d does not rise from %d at version %d", r.Seq, r.Version, rs[i-1].Seq, rs[i-1].Version))
		case r.Tip && !newest:
			errs = append(errs, fmt.Errorf("the tip is version %d, not the newest", r.Version))
		case r.Deleted && r.Tip:
			errs = append(errs, fmt.Errorf("the tip (version %d) is a tombstone", r.Version))
		case r.Deleted && r.Op != events.OpDelete:
			errs = append(errs, fmt.Errorf("the tombstone at version %d has _op %q", r.Version, r.Op))
		case newest && !r.Tip && !r.Deleted:
			errs = append(errs, fmt.Errorf("the newest version %d is neither the tip nor a tombstone", r.Version))
		}
		if len(errs) > 0 {
			break // one finding per row says enough
		}
	}
	return errors.Join(errs...)
}

func versions(rs []rows.Row) []int64 {
	v := make([]int64, len(rs))
	for i, r := range rs {
		v[i] = r.Version
	}
	return v
}
