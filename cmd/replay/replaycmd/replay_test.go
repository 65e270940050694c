package replaycmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
)

// replayEnv is a pipeline for the replay tests (clitest.Pipeline), with
// the replay command to run against it.
type replayEnv struct{ *clitest.Pipeline }

func startReplayEnv(t *testing.T, jcfg ...journal.Config) *replayEnv {
	t.Helper()
	return &replayEnv{clitest.StartPipeline(t, jcfg...)}
}

// replay runs the replay command with the env's connection flags after
// the subcommand.
func (e *replayEnv) replay(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return e.Replay(t, Run, args...)
}

func upsert(rk string, props edm.Entity) events.RowOp {
	return events.RowOp{Op: events.OpUpsert, RK: rk, Entity: props}
}

func TestReplayCLI(t *testing.T) {
	e := startReplayEnv(t)
	o1 := e.Publish(t, "c1", upsert("order-7", edm.Entity{"status": edm.String("new"), "qty": edm.Int64(9007199254740993)}))
	e.Publish(t, "c2", upsert("order-7", edm.Entity{"status": edm.String("shipped"), "qty": edm.Int64(9007199254740993)}),
		upsert("order-8", edm.Entity{"total": edm.Double(12.5)}))
	e.Publish(t, "c3", events.RowOp{Op: events.OpDelete, RK: "order-8"})

	t.Run("asof row json", func(t *testing.T) {
		out, errs, code := e.replay(t, "asof", "--table", "orders", "--pk", "customer-42", "--rk", "order-7", "--seq", fmt.Sprint(o1.Seq), "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var got struct {
			Exists bool `json:"exists"`
			Row    struct {
				Version int64           `json:"version"`
				Cmd     string          `json:"cmd"`
				Entity  json.RawMessage `json:"entity"`
			} `json:"row"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if !got.Exists || got.Row.Version != 0 || got.Row.Cmd != "c1" ||
			!strings.Contains(string(got.Row.Entity), `"qty":"9007199254740993","qty@odata.type":"Edm.Int64"`) {
			t.Fatalf("asof: %s", out)
		}
	})
	t.Run("asof table text", func(t *testing.T) {
		out, errs, code := e.replay(t, "asof", "--table", "orders", "--cmd", "c2")
		if code != 0 || !strings.Contains(out, `status=Edm.String("shipped")`) || !strings.Contains(out, "total=Edm.Double(12.5)") || !strings.Contains(out, "2 rows") {
			t.Fatalf("exit %d: %s%s", code, out, errs)
		}
		out, _, _ = e.replay(t, "asof", "--table", "orders", "--pk", "customer-42", "--rk", "order-8")
		if !strings.Contains(out, "deleted (version 1, by c3") {
			t.Fatalf("asof of a deleted row: %s", out)
		}
	})
	t.Run("history diff", func(t *testing.T) {
		out, errs, code := e.replay(t, "history", "--table", "orders", "--pk", "customer-42", "--rk", "order-8", "--diff")
		if code != 0 || !strings.Contains(out, "+total=Edm.Double(12.5)") || !strings.Contains(out, "tombstone") || !strings.Contains(out, "-total=") {
			t.Fatalf("exit %d: %s%s", code, out, errs)
		}
	})
	t.Run("blame", func(t *testing.T) {
		out, errs, code := e.replay(t, "blame", "--cmd", "c2")
		if code != 0 || !strings.Contains(out, "applied") || !strings.Contains(out, "order-8") || !strings.Contains(out, "superseded") {
			t.Fatalf("exit %d: %s%s", code, out, errs)
		}
	})
	t.Run("undo", func(t *testing.T) {
		// c3 deleted order-8: the undo inserts it back.
		out, errs, code := e.replay(t, "undo", "--cmd", "c3")
		if code != 0 || !strings.Contains(out, "insert → values of version 0") || !strings.Contains(out, "dry run") {
			t.Fatalf("dry run: exit %d: %s%s", code, out, errs)
		}
		out, errs, code = e.replay(t, "undo", "--cmd", "c3", "--apply", "--json")
		if code != 0 || !strings.Contains(out, `"id":"undo-c3-0"`) || !strings.Contains(out, `"status":"applied"`) {
			t.Fatalf("apply: exit %d: %s%s", code, out, errs)
		}
		out, _, _ = e.replay(t, "asof", "--table", "orders", "--pk", "customer-42", "--rk", "order-8")
		if !strings.Contains(out, "version 2, insert by undo-c3-0") {
			t.Fatalf("after undo: %s", out)
		}
		// c1's row was changed by c2: a conflict, refused with status 3.
		out, errs, code = e.replay(t, "undo", "--cmd", "c1", "--apply")
		if code != cli.ExitRejected || !strings.Contains(out, "CONFLICT, changed later by c2") {
			t.Fatalf("conflict: exit %d: %s%s", code, out, errs)
		}
	})
	t.Run("snapshot load rebuild", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "orders.snap")
		out, errs, code := e.replay(t, "snapshot", "--table", "orders", "--out", file)
		if code != 0 || !strings.Contains(out, "snapshot of orders at seq 4") {
			t.Fatalf("snapshot: exit %d: %s%s", code, out, errs)
		}
		out, errs, code = e.replay(t, "load", "--in", file, "--into", "ordersCopy")
		if code != 0 || !strings.Contains(out, "loaded 6 rows") /* 5 rows and the fence */ {
			t.Fatalf("load: exit %d: %s%s", code, out, errs)
		}
		out, errs, code = e.replay(t, "rebuild", "--table", "orders", "--into", "ordersAt2", "--to", "seq:2", "--json")
		if code != 0 || !strings.Contains(out, `"applied":2`) {
			t.Fatalf("rebuild: exit %d: %s%s", code, out, errs)
		}
		out, errs, code = e.replay(t, "restore", "--table", "orders", "--to", "cmd:c1", "--apply")
		if code != 0 || !strings.Contains(out, "applied") {
			t.Fatalf("restore: exit %d: %s%s", code, out, errs)
		}
		out, _, _ = e.replay(t, "asof", "--table", "orders")
		if !strings.Contains(out, `status=Edm.String("new")`) || !strings.Contains(out, "1 row\n") {
			t.Fatalf("after restore: %s", out)
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"asof"},
			{"asof", "--table", "orders", "--rk", "x"},
			{"asof", "--table", "orders", "--seq", "1", "--time", "2026-01-01T00:00:00Z"},
			{"restore", "--table", "orders"},
			{"frobnicate"},
		} {
			var out, errb bytes.Buffer
			if code := cli.Exit(Run(e.Ctx, args, cli.IO{Stdout: &out, Stderr: &errb}), &errb); code != cli.ExitUsage {
				t.Errorf("%v: exit %d, want %d: %s", args, code, cli.ExitUsage, errb.String())
			}
		}
	})
}

// TestReplayProgress checks that rebuild draws its progress bar on a
// terminal stderr, and prints nothing there otherwise.
func TestReplayProgress(t *testing.T) {
	e := startReplayEnv(t)
	for i := range 20 {
		e.Publish(t, fmt.Sprintf("p%d", i), upsert(fmt.Sprintf("r%d", i%3), edm.Entity{"n": edm.Int32(int32(i))}))
	}
	for _, tty := range []bool{true, false} {
		var out, bar bytes.Buffer
		stdio := cli.IO{Stdout: &out, Stderr: &bar, IsTerminal: func(w io.Writer) bool { return tty && w == &bar }}
		err := Run(e.Ctx, []string{"rebuild", "--nats", e.URL, "--tables", e.Tables, "--table", "orders", "--into", fmt.Sprintf("copy%v", tty)}, stdio)
		if err != nil {
			t.Fatal(err)
		}
		if tty != strings.Contains(bar.String(), "rebuild") || tty != strings.Contains(bar.String(), "cmd/s") {
			t.Fatalf("tty %v: stderr %q", tty, bar.String())
		}
		if !strings.Contains(out.String(), "20 commands (20 applied") {
			t.Fatalf("stdout: %s", out.String())
		}
	}
}
