package rows_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// TestReadAround: the row as a command found it (Before) and left it (At),
// for a command that wrote the tip, one whose version was superseded, a
// delete and an insert after it, a command of another row, and sequences
// before the row existed and past its last write.
func TestReadAround(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	entries := []projection.Entry{
		entry(1, "c1", upsert("other", "n", 1)),
		entry(2, "c2", op(events.OpInsert, "r", "n", 2)),
		entry(3, "c3", op(events.OpMerge, "r", "m", 3)),
		entry(4, "c4", upsert("other", "n", 4)),
		entry(5, "c5", op(events.OpDelete, "r", "", 0)),
		entry(6, "c6", op(events.OpInsert, "r", "n", 6)),
	}
	if err := projection.NewApplier(st, projection.ApplierConfig{CacheRows: -1}).Apply(ctx, "orders", "p", entries, projection.Hooks{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rk                 string
		seq                uint64
		wantAt, wantBefore string // the commands of the versions; "" none
	}{
		{"r", 1, "", ""},     // before the row existed
		{"r", 2, "c2", ""},   // its insert, superseded
		{"r", 3, "c3", "c2"}, // a merge, superseded
		{"r", 4, "", "c3"},   // another row's command
		{"r", 5, "c5", "c3"}, // the delete: At is the tombstone
		{"r", 6, "c6", "c5"}, // the insert after it wrote the tip: Before is the tombstone
		{"r", 7, "", "c6"},   // past the last write: the tip
		{"other", 4, "c4", "c1"},
		{"none", 3, "", ""},
	}
	for _, tt := range tests {
		a, err := rows.ReadAround(ctx, st, "orders", "p", tt.rk, tt.seq)
		if err != nil {
			t.Fatalf("%s at %d: %v", tt.rk, tt.seq, err)
		}
		if got := cmdOf(a.At); got != tt.wantAt {
			t.Errorf("%s at %d: At is %q, want %q", tt.rk, tt.seq, got, tt.wantAt)
		}
		if got := cmdOf(a.Before); got != tt.wantBefore {
			t.Errorf("%s at %d: Before is %q, want %q", tt.rk, tt.seq, got, tt.wantBefore)
		}
	}
	if a, err := rows.ReadAround(ctx, st, "nosuch", "p", "r", 3); err != nil || a.At != nil || a.Before != nil {
		t.Errorf("a table that does not exist: %+v, %v; want nothing and no error", a, err)
	}
	if a, _ := rows.ReadAround(ctx, st, "orders", "p", "r", 5); a.At == nil || !a.At.Deleted {
		t.Errorf("the delete's version is %+v, want a tombstone", a.At)
	}
}

func cmdOf(r *rows.Row) string {
	if r == nil {
		return ""
	}
	return r.Cmd
}
