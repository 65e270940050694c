// TestLoadRanges and TestLoadThroughEmptyPages check the row loader the
// projector decides on against point reads; the rows are written by the
// projector's applier.
package rows_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// TestLoadRanges checks the two-query row loader against point reads, on
// rows that exist, were deleted, were deleted and re-inserted, and never
// existed, with keys where one is a prefix of another or holds ":", and on a
// partition large enough that a bounded page leaves rows for point reads.
func TestLoadRanges(t *testing.T) {
	ctx := context.Background()
	var j journal
	add := j.add
	for i := range 100 {
		add(upsert(fmt.Sprintf("m%03d", i), "n", i))
	}
	add(upsert("a", "n", 1), upsert("a1", "n", 1), upsert("a:b", "n", 1), upsert("b", "n", 1), upsert("c", "n", 1))
	add(upsert("a:b", "n", 2))
	add(op(events.OpDelete, "b", "", 0))
	add(op(events.OpDelete, "c", "", 0))
	add(op(events.OpInsert, "c", "n", 3))
	add(upsert("a:b", "n", 3), op(events.OpDelete, "a1", "", 0))
	for i := range 30 {
		add(upsert("h", "n", i)) // a deep history between two new rows
	}
	st := j.applied(t)

	tests := []struct {
		name     string
		rks      []string
		allByTwo bool // every row answered by the two range queries
	}{
		{"prefixes and colons", []string{"a", "a1", "a:b", "b", "c", "b0", "a:"}, true},
		{"all deleted or new", []string{"b", "a1", "bb", "0"}, true},
		{"one", []string{"c"}, true},
		{"scattered over a large partition", []string{"a", "zz", "m050", "b"}, false},
		// The page of version rows fills with h's history: i is read alone.
		{"new rows around a deep history", []string{"g", "i"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := map[string]*rows.State{}
			rest, err := rows.LoadRanges(ctx, st, "orders", "p", tt.rks, state)
			if err != nil {
				t.Fatal(err)
			}
			if tt.allByTwo != (len(rest) == 0) {
				t.Errorf("rows left for point reads: %q", rest)
			}
			for _, rk := range rest {
				if _, ok := state[rk]; ok {
					t.Errorf("%q both loaded and left for point reads", rk)
				}
			}
			for _, rk := range tt.rks {
				want, err := rows.ReadState(ctx, st, "orders", "p", rk)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := state[rk]
				if !ok {
					continue // in rest
				}
				if g, w := describeState(got), describeState(want); g != w {
					t.Errorf("%q: range load %s, point reads %s", rk, g, w)
				}
			}
		})
	}
}

func describeState(s *rows.State) string {
	row := func(r *rows.Row) string {
		if r == nil {
			return "none"
		}
		return fmt.Sprintf("v%d seq %d deleted=%v tip=%v", r.Version, r.Seq, r.Deleted, r.Tip)
	}
	return fmt.Sprintf("tip %s, latest %s", row(s.Tip), row(s.Latest))
}

// TestLoadThroughEmptyPages: on a store that answers the first page of
// every query empty with a continuation, as Azure may, the row loader
// still finds every row's state: the range queries cover nothing and leave
// the rows to point reads, which follow the continuation.
func TestLoadThroughEmptyPages(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	entries := []projection.Entry{
		entry(1, "c1", upsert("a", "n", 1), upsert("b", "n", 1), upsert("c", "n", 1)),
		entry(2, "c2", op(events.OpDelete, "b", "", 0)),
		entry(3, "c3", op(events.OpDelete, "c", "", 0)),
		entry(4, "c4", op(events.OpInsert, "c", "n", 4)),
	}
	if err := projection.NewApplier(st, projection.ApplierConfig{CacheRows: -1}).Apply(ctx, "orders", "p", entries, projection.Hooks{}); err != nil {
		t.Fatal(err)
	}
	paged := &storetest.Paging{Store: st, EmptyFirst: true}
	rks := []string{"a", "b", "c", "never"}
	got, err := rows.Load(ctx, paged, "orders", "p", rks)
	if err != nil {
		t.Fatal(err)
	}
	for _, rk := range rks {
		want, err := rows.ReadState(ctx, st, "orders", "p", rk)
		if err != nil {
			t.Fatal(err)
		}
		one, err := rows.ReadState(ctx, paged, "orders", "p", rk)
		if err != nil {
			t.Fatal(err)
		}
		if g, o, w := describeState(got[rk]), describeState(one), describeState(want); g != w || o != w {
			t.Errorf("%q through empty pages: load %s, point reads %s; want %s", rk, g, o, w)
		}
	}
	if paged.EmptyPages() == 0 {
		t.Fatal("no empty page answered")
	}
}

// journal is the commands of partition orders/p, numbered from 1.
type journal struct{ entries []projection.Entry }

// add appends a command of ops and returns its sequence.
func (j *journal) add(ops ...events.RowOp) uint64 {
	seq := uint64(len(j.entries) + 1)
	j.entries = append(j.entries, entry(seq, fmt.Sprintf("c%d", seq), ops...))
	return seq
}

// applied returns an embedded store with j's commands applied by the
// projector's applier.
func (j *journal) applied(t *testing.T) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := projection.NewApplier(st, projection.ApplierConfig{CacheRows: -1}).Apply(ctx, "orders", "p", j.entries, projection.Hooks{}); err != nil {
		t.Fatal(err)
	}
	return st
}

// entry is a command of partition orders/p at journal sequence seq.
func entry(seq uint64, id string, ops ...events.RowOp) projection.Entry {
	return projection.Entry{Seq: seq, At: time.Unix(int64(seq), 0).UTC(), ID: id,
		Cmd: &events.Command{ID: id, Table: "orders", PK: "p", Ops: ops}}
}

// op is a row op setting property name to n (none for a delete).
func op(kind events.OpKind, rk string, name string, n int) events.RowOp {
	o := events.RowOp{Op: kind, RK: rk}
	if kind != events.OpDelete {
		o.Entity = edm.Entity{name: edm.Int64(int64(n))}
	}
	return o
}

func upsert(rk string, name string, n int) events.RowOp { return op(events.OpUpsert, rk, name, n) }
