package replaycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
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

// TestVerifyTableLost: verify of a table the store lost (its journal has
// commands) reports the drift, every row missing, exit 3; before, it
// failed with "table not found", exit 1.
func TestVerifyTableLost(t *testing.T) {
	e := startReplayEnv(t)
	e.Publish(t, "c1", upsert("order-7", edm.Entity{"status": edm.String("new")}), upsert("order-8", edm.Entity{"total": edm.Double(12.5)}))
	e.Publish(t, "c2", upsert("order-7", edm.Entity{"status": edm.String("shipped")}))
	var sum struct {
		Rows    int64 `json:"rows"`
		Missing int64 `json:"missing"`
		Extra   int64 `json:"extra"`
		Changed int64 `json:"changed"`
	}
	out, errs, code := e.replay(t, "verify", "--table", "orders", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || sum.Rows == 0 {
		t.Fatalf("verify before the loss: exit %d, %v: %s%s", code, err, out, errs)
	}
	rows := sum.Rows
	if err := e.Store.DeleteTable(e.Ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	out, errs, code = e.replay(t, "verify", "--table", "orders")
	if code != cli.ExitRejected || !strings.HasPrefix(errs, "drift: orders does not exist in the table store") ||
		!strings.Contains(errs, fmt.Sprintf("%d rows missing", rows)) || !strings.Contains(out, `missing  "customer-42" "tip:order-7"`) {
		t.Fatalf("verify of a lost table: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, _, code = e.replay(t, "verify", "--table", "orders", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != cli.ExitRejected || err != nil || sum.Missing != rows || sum.Extra != 0 || sum.Changed != 0 {
		t.Fatalf("verify --json of a lost table: exit %d, %v: %s", code, err, out)
	}
	// diff still refuses a table that does not exist: a typo, not drift.
	if _, errs, code = e.replay(t, "diff", "--table", "orders", "--against", "nosuch"); code != cli.ExitFailure || !strings.Contains(errs, "table not found") {
		t.Fatalf("diff against a missing table: exit %d, stderr %q", code, errs)
	}
}

// TestReadOnlyCreatesNothing: a command that only reads, in a folder with
// no embedded store, says so and creates nothing; before, it created
// ./data/tables.db and then answered "table not found".
func TestReadOnlyCreatesNothing(t *testing.T) {
	for _, args := range [][]string{
		{"asof", "--table", "orders", "--pk", "p", "--seq", "1"},
		{"history", "--table", "orders", "--pk", "p", "--rk", "r"},
		{"diff", "--table", "orders", "--against", "other"},
	} {
		t.Run(args[0], func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), append(args, "--data", data, "--nats", "nats://127.0.0.1:1"), cli.IO{Stdout: &stdout, Stderr: &stderr})
			if !errors.Is(err, stores.ErrNoStore) || !strings.Contains(err.Error(), filepath.Join(data, stores.EmbeddedFile)+" does not exist") {
				t.Fatalf("%s: %v, want stores.ErrNoStore naming the file", args[0], err)
			}
			if code := cli.Exit(err, &stderr); code != cli.ExitFailure {
				t.Errorf("exit %d, want %d", code, cli.ExitFailure)
			}
			if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s created %s (%v)", args[0], data, err)
			}
		})
	}
}
