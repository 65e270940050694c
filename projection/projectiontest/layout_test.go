package projectiontest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// TestLayoutErrors writes tables by hand, each breaking one rule of the
// layout (or none), and checks that LayoutErrors finds exactly that.
func TestLayoutErrors(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	row := func(v int64, seq uint64, tip, deleted bool) rows.Row {
		op := events.OpUpsert
		if deleted {
			op = events.OpDelete
		}
		return rows.Row{PK: "p", RK: "r", Version: v, Cmd: fmt.Sprint("c", seq), Seq: seq, At: at, Op: op,
			Tip: tip, Deleted: deleted, Props: edm.Entity{"x": edm.Int64(int64(v))}}
	}
	put := func(r rows.Row) store.Op {
		return store.Op{Kind: store.Upsert, RK: r.StoreKey(), Props: r.Encode()}
	}
	without := func(r rows.Row, col string) store.Op {
		o := put(r)
		delete(o.Props, col)
		return o
	}
	retyped := func(r rows.Row, col string, v edm.Value) store.Op {
		o := put(r)
		o.Props[col] = v
		return o
	}
	fence := store.Op{Kind: store.Upsert, RK: rows.FenceKey, Props: edm.Entity{"_seq": edm.Int64(9)}}
	tests := []struct {
		name string
		ops  []store.Op
		want string // "" for none
	}{
		{"tip and versions", []store.Op{put(row(0, 1, false, false)), put(row(1, 3, false, false)), put(row(2, 5, true, false)), fence}, ""},
		{"deleted and re-inserted", []store.Op{put(row(0, 1, false, false)), put(row(1, 2, false, true)), put(row(2, 4, true, false))}, ""},
		{"deleted", []store.Op{put(row(0, 1, false, false)), put(row(1, 2, false, true))}, ""},
		{"gap", []store.Op{put(row(0, 1, false, false)), put(row(2, 3, true, false))}, "not contiguous"},
		{"not from 0", []store.Op{put(row(1, 1, true, false))}, "not contiguous"},
		{"seq falls", []store.Op{put(row(0, 5, false, false)), put(row(1, 3, true, false))}, "does not rise"},
		{"tip not newest", []store.Op{put(row(0, 1, true, false)), put(row(1, 3, false, false))}, "not the newest"},
		{"tombstone tip", []store.Op{put(row(0, 1, false, false)), put(row(1, 3, true, true))}, "is a tombstone"},
		{"no tip nor tombstone", []store.Op{put(row(0, 1, false, false)), put(row(1, 3, false, false))}, "neither the tip nor a tombstone"},
		{"no _seq", []store.Op{without(row(0, 1, true, false), rows.ColSeq)}, "no _seq"},
		{"no _at", []store.Op{without(row(0, 1, true, false), rows.ColAt)}, "no _at"},
		{"_v an Int32", []store.Op{retyped(row(0, 1, true, false), rows.ColVersion, edm.Int32(0))}, "_v is Edm.Int32"},
		{"_deleted false", []store.Op{retyped(row(0, 1, true, false), rows.ColDeleted, edm.Bool(false))}, "_deleted"},
		{"not a layout key", []store.Op{{Kind: store.Upsert, RK: "r", Props: row(0, 1, true, false).Encode()}}, "not a tip or version row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := SQLite(t)
			SkipLayoutCheck(t) // the point is to break it
			if err := st.CreateTable(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Transact(ctx, "orders", "p", tt.ops); err != nil {
				t.Fatal(err)
			}
			errs := LayoutErrors(ctx, st, "orders")
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("layout errors in a sound table: %v", errs)
			case tt.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want)):
				t.Errorf("got %v, want one error saying %q", errs, tt.want)
			}
		})
	}
}

// recorder is a test that records its cleanups and errors.
type recorder struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Failed() bool { return len(r.errs) > 0 }

// TestCheckLayoutInCleanup: the check registered by CheckLayout reports a
// broken table when the test ends, and not when the test opted out.
func TestCheckLayoutInCleanup(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, optOut := range []string{"", "orders", "other"} {
		t.Run("opt out "+optOut, func(t *testing.T) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db")) // checked by rec only
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rec := &recorder{TB: t}
			CheckLayout(rec, st)
			if optOut != "" {
				SkipLayoutCheck(rec, optOut)
			}
			broken := rows.Row{PK: "p", RK: "r", Version: 3, Cmd: "c", Seq: 1, At: at, Op: events.OpUpsert, Tip: true}
			if err := st.CreateTable(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Transact(ctx, "orders", "p", []store.Op{{Kind: store.Insert, RK: broken.StoreKey(), Props: broken.Encode()}}); err != nil {
				t.Fatal(err)
			}
			if len(rec.cleanups) != 1 {
				t.Fatalf("%d cleanups registered, want 1", len(rec.cleanups))
			}
			rec.cleanups[0]()
			want := 1
			if optOut == "orders" {
				want = 0
			}
			if len(rec.errs) != want || want == 1 && !strings.Contains(rec.errs[0], "not contiguous") {
				t.Errorf("errors %q, want %d about versions not contiguous", rec.errs, want)
			}
		})
	}
}
