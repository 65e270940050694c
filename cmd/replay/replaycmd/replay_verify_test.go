package replaycmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// TestVerifyAndDiffCLI: verify of a freshly projected table is identical
// (exit 0); a rebuilt shadow diffs identical against it; then a row
// changed, a row added and a version row deleted directly in the store are
// named by verify and diff, exactly those three, with exit status 3, in
// text and JSON.
func TestVerifyAndDiffCLI(t *testing.T) {
	e := startReplayEnv(t)
	e.Publish(t, "c1", upsert("order-7", edm.Entity{"status": edm.String("new")}), upsert("order-8", edm.Entity{"total": edm.Double(12.5)}))
	e.Publish(t, "c2", upsert("order-7", edm.Entity{"status": edm.String("shipped")}))
	o3 := e.Publish(t, "c3", events.RowOp{Op: events.OpDelete, RK: "order-8"})
	seq := fmt.Sprint(o3.Seq)

	out, errs, code := e.replay(t, "verify", "--table", "orders")
	if code != 0 || !strings.Contains(out, "orders at seq "+seq+": identical to its journal (5 rows compared, 3 commands re-projected") {
		t.Fatalf("verify: exit %d: %s%s", code, out, errs)
	}
	out, errs, code = e.replay(t, "verify", "--table", "orders", "--scratch-local", "--seq", seq, "--json")
	var sum struct {
		Identical bool          `json:"identical"`
		Rows      int64         `json:"rows"`
		Seq       uint64        `json:"seq"`
		Missing   int64         `json:"missing"`
		Extra     int64         `json:"extra"`
		Changed   int64         `json:"changed"`
		Diffs     []diffJSONRow `json:"differences"`
		Truncated bool          `json:"truncated"`
	}
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || !sum.Identical || sum.Rows != 5 || sum.Seq != o3.Seq || sum.Diffs == nil {
		t.Fatalf("verify --json: exit %d, %v: %s%s", code, err, out, errs)
	}
	if _, errs, code = e.replay(t, "rebuild", "--table", "orders", "--into", "shadow", "--seq", seq); code != 0 {
		t.Fatalf("rebuild: exit %d: %s", code, errs)
	}
	if out, errs, code = e.replay(t, "diff", "--table", "orders", "--against", "shadow", "--seq", seq); code != 0 || !strings.Contains(out, "identical to shadow") {
		t.Fatalf("diff: exit %d: %s%s", code, out, errs)
	}

	// Writes that bypass the journal.
	version := rows.VersionKey("order-7", 1) // order-7 v0, written by c1 at seq 1
	for _, op := range []store.Op{
		{Kind: store.Merge, RK: rows.TipKey("order-7"), Props: edm.Entity{"status": edm.String("hacked")}, IfMatch: "*"},
		{Kind: store.Insert, RK: "tip:order-9", Props: edm.Entity{"total": edm.Double(1)}},
		{Kind: store.Delete, RK: version, IfMatch: "*"},
	} {
		if _, err := e.Store.Transact(e.Ctx, "orders", "customer-42", []store.Op{op}); err != nil {
			t.Fatalf("%v %s: %v", op.Kind, op.RK, err)
		}
	}
	for _, args := range [][]string{{"verify", "--table", "orders"}, {"diff", "--table", "orders", "--against", "shadow", "--seq", seq}} {
		out, errs, code = e.replay(t, args...)
		want := []string{
			`changed  "customer-42" "tip:order-7"`, `status: Edm.String("hacked"), want Edm.String("shipped")`,
			`extra    "customer-42" "tip:order-9"`, `missing  "customer-42" "` + version + `"`,
			"3 differences", "1 missing, 1 extra, 1 changed",
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("%s: no %q in:\n%s", args[0], w, out)
			}
		}
		if code != cli.ExitRejected || !strings.HasPrefix(errs, "drift: orders differs from ") {
			t.Fatalf("%s: exit %d, stderr %q", args[0], code, errs)
		}
		out, _, code = e.replay(t, append(args, "--json")...)
		if err := json.Unmarshal([]byte(out), &sum); code != cli.ExitRejected || err != nil || sum.Identical || len(sum.Diffs) != 3 ||
			sum.Missing != 1 || sum.Extra != 1 || sum.Changed != 1 {
			t.Fatalf("%s --json: exit %d, %v: %s", args[0], code, err, out)
		}
		kinds := map[string]string{}
		for _, d := range sum.Diffs {
			kinds[d.Key] = d.Kind
		}
		if kinds["tip:order-7"] != "changed" || kinds["tip:order-9"] != "extra" || kinds[version] != "missing" {
			t.Fatalf("%s --json: %+v", args[0], sum.Diffs)
		}
		out, _, _ = e.replay(t, append(args, "--max", "1")...)
		if strings.Count(out, "\n") != 3 || !strings.Contains(out, "... 2 more (--max 1)") {
			t.Fatalf("%s --max 1: %s", args[0], out)
		}
	}

	// On a terminal, one progress bar per phase.
	var stdout, bar bytes.Buffer
	err := Run(e.Ctx, []string{"verify", "--nats", e.URL, "--tables", e.Tables, "--table", "orders"},
		cli.IO{Stdout: &stdout, Stderr: &bar, IsTerminal: func(w io.Writer) bool { return w == &bar }})
	if cli.Exit(err, &bytes.Buffer{}) != cli.ExitRejected || !strings.Contains(bar.String(), "rebuild") || !strings.Contains(bar.String(), "compare") {
		t.Fatalf("verify on a terminal: %v, stderr %q", err, bar.String())
	}
}
