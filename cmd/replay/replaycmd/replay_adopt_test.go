package replaycmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// TestAdoptCLI adopts a table written straight into the store: the dry
// run lists a row it cannot journal and exits 3; --skip-invalid --apply
// journals the others; a second first pass is refused, --resume finds
// nothing to do, --catch-up journals a change.
func TestAdoptCLI(t *testing.T) {
	e := startReplayEnv(t)
	ctx := e.Ctx
	if err := e.Store.CreateTable(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}
	put := func(pk, rk string, props edm.Entity) {
		t.Helper()
		if _, err := e.Store.Transact(ctx, "legacy", pk, []store.Op{{Kind: store.Upsert, RK: rk, Props: props}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		put(fmt.Sprintf("c%d", i%3), fmt.Sprintf("o%d", i), edm.Entity{"qty": edm.Int64(1<<53 + int64(i))})
	}
	put("c0", "fence", edm.Entity{"x": edm.Int32(1)})

	out, errs, code := e.replay(t, "adopt", "--table", "legacy", "--into", "orders2")
	if code != 3 || !strings.Contains(out, `"c0"/"fence": rule layout-key`) || !strings.Contains(errs, "--skip-invalid") {
		t.Fatalf("dry run with a layout key: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = e.replay(t, "adopt", "--table", "legacy", "--into", "orders2", "--skip-invalid", "--apply", "--json")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errs)
	}
	var v struct {
		Rows, Upserts int
		Problems      []struct{ RK, Rule string }
		Result        struct{ Published int }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Rows != 13 || v.Upserts != 12 || v.Result.Published != 12 || len(v.Problems) != 1 || v.Problems[0].Rule != "layout-key" {
		t.Fatalf("apply: %s", out)
	}
	if _, _, code = e.replay(t, "adopt", "--table", "legacy", "--into", "orders2"); code != 3 {
		t.Fatalf("a first pass into an adopted table: exit %d, want 3", code)
	}
	out, errs, code = e.replay(t, "adopt", "--table", "legacy", "--into", "orders2", "--resume", "--skip-invalid")
	if code != 0 || !strings.Contains(out, "delta: 0 upserts, 0 deletes (12 rows unchanged)") {
		t.Fatalf("resume over an unchanged table: exit %d\n%s\n%s", code, out, errs)
	}
	put("c1", "o1", edm.Entity{"qty": edm.Double(2)})
	out, errs, code = e.replay(t, "adopt", "--table", "legacy", "--into", "orders2", "--catch-up", "--skip-invalid", "--apply")
	if code != 0 || !strings.Contains(out, "delta: 1 upserts, 0 deletes (11 rows unchanged)") || !strings.Contains(out, "journaled: 1 commands") {
		t.Fatalf("catch-up: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = e.replay(t, "asof", "--table", "orders2", "--pk", "c1", "--rk", "o1")
	if code != 0 || !strings.Contains(out, "Edm.Double") {
		t.Fatalf("asof of the caught-up row: exit %d\n%s\n%s", code, out, errs)
	}

	// In place: the table itself, into the layout; not partition c0,
	// whose row "fence" is where the projector writes its fence.
	out, errs, code = e.replay(t, "adopt", "--table", "legacy", "--in-place", "--skip-invalid", "--apply")
	if code != 0 || !strings.Contains(out, "moved: 8 rows; 0 changed") || !strings.Contains(out, "5 rows skipped") {
		t.Fatalf("in place: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = e.replay(t, "asof", "--table", "legacy", "--pk", "c2", "--rk", "o2")
	if code != 0 || !strings.Contains(out, "9007199254740994") {
		t.Fatalf("asof of a row adopted in place: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code = e.replay(t, "adopt", "--table", "legacy", "--in-place", "--into", "x3x"); code != 2 || !strings.Contains(errs, "drop --into") {
		t.Fatalf("--in-place with --into: exit %d\n%s", code, errs)
	}
}
