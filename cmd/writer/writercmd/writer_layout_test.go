package writercmd

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// TestLayoutCommand sets a new table plain with writer layout, writes it
// with the writer as before, and finds the table holding exactly the
// current row at its own keys; the refusals exit 1 with the reason, the
// mistakes 2.
func TestLayoutCommand(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := journal.Config{Shards: 2}
	h := projectiontest.Start(t, st, projectiontest.Options{Journal: cfg})
	h.StartProjector(projection.Config{Journal: cfg, NoChangeFeed: true})
	e := &writerEnv{url: h.Server.ClientURL(), js: h.JS, j: h.Journal}

	out, errOut, code := e.run(t, "layout", "--table", "orders", "--plain")
	if code != 0 || !strings.HasPrefix(out, "table orders: plain (journal sequence ") {
		t.Fatalf("layout --plain: exit %d, %q %q", code, out, errOut)
	}
	for _, v := range []string{"1", "2"} {
		if out, errOut, code := e.run(t, "upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--set", "n:int64="+v, "--wait"); code != 0 {
			t.Fatalf("upsert: exit %d, %q %q", code, out, errOut)
		}
	}
	got, err := store.Collect(ctx, st, "orders", store.Query{AllPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].PK != "p" || got[0].RK != "r" || got[0].Props["n"].Int != 2 || got[0].Props["_v"].Int != 1 {
		t.Fatalf("plain table holds %+v, want the one current row p/r at version 1", got)
	}

	if _, errOut, code := e.run(t, "layout", "--table", "orders", "--versioned"); code != 1 || !strings.Contains(errOut, "set already") {
		t.Fatalf("layout --versioned of a plain table: exit %d, %q", code, errOut)
	}
	if out, errOut, code := e.run(t, "layout", "--table", "orders", "--plain", "--json"); code != 0 || !strings.Contains(out, `"layout":"plain"`) {
		t.Fatalf("layout --plain again: exit %d, %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run(t, "upsert", "--table", "customers", "--pk", "p", "--rk", "r"); code != 0 {
		t.Fatalf("upsert customers: exit %d, %q", code, errOut)
	}
	if _, errOut, code := e.run(t, "layout", "--table", "customers", "--plain"); code != 1 || !strings.Contains(errOut, "rebuild --into") {
		t.Fatalf("layout of a table with commands: exit %d, %q", code, errOut)
	}
	for _, args := range [][]string{
		{"layout", "--table", "x1x"},
		{"layout", "--table", "x1x", "--plain", "--versioned"},
		{"layout", "--plain"},
	} {
		if _, errOut, code := e.run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%q)", args, code, errOut)
		}
	}
}
