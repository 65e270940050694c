package replaycmd

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// TestReplayUserFacing covers what a user of replay sees (issue 8 items 12,
// 14, 15 and 16): errors alone on failure, usage errors that name the
// flag, flags before the subcommand, one time format, the diff in JSON,
// undo applied twice, counts in the singular.
func TestReplayUserFacing(t *testing.T) {
	e := startReplayEnv(t)
	merge := func(rk string, props edm.Entity) events.RowOp {
		return events.RowOp{Op: events.OpMerge, RK: rk, Entity: props}
	}
	e.Publish(t, "c1", upsert("r1", edm.Entity{"a": edm.Int32(1), "gone": edm.String("x")}))
	e.Publish(t, "c2", events.RowOp{Op: events.OpReplace, RK: "r1", Entity: edm.Entity{"a": edm.Int32(2), "b": edm.Int64(3)}})
	e.Publish(t, "c3", upsert("r2", edm.Entity{"x": edm.Int32(1)}))
	e.Publish(t, "c4", merge("r1", edm.Entity{"c": edm.Bool(true)}))

	t.Run("a missing table prints only the error", func(t *testing.T) {
		for _, extra := range [][]string{nil, {"--json"}, {"--pk", "customer-42"}} {
			out, errs, code := e.replay(t, append([]string{"asof", "--table", "nosuchtable"}, extra...)...)
			if code != cli.ExitFailure || out != "" || !strings.Contains(errs, "not found") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and the error alone", extra, code, out, errs)
			}
		}
	})
	t.Run("usage errors name the flag", func(t *testing.T) {
		tests := []struct {
			args []string
			want string
		}{
			{[]string{"asof", "--table", "orders", "--cmd", ""}, "--cmd needs a value"},
			{[]string{"blame", "--cmd", ""}, "--cmd needs a value"},
			{[]string{"undo", "--cmd", ""}, "--cmd needs a value"},
			{[]string{"asof", "--table", "bad-name"}, "rule table-name"},
			{[]string{"rebuild", "--table", "orders", "--into", "x"}, `--into "x": rule table-name`},
			{[]string{"asof", "--table", "orders", "--seq", "x"}, `invalid value "x" for flag --seq`},
			{[]string{"diff", "--table", "orders", "--against", "ORDERS"}, "name the same table"},
		}
		for _, tt := range tests {
			out, errs, code := e.replay(t, tt.args...)
			if code != cli.ExitUsage || out != "" || !strings.Contains(errs, tt.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tt.args, code, out, errs, tt.want)
			}
		}
	})
	t.Run("flags before the command", func(t *testing.T) {
		var out, errb bytes.Buffer
		args := []string{"--nats", e.URL, "--tables", e.Tables, "--json", "asof", "--table", "orders", "--pk", "customer-42", "--rk", "r2"}
		if code := cli.Exit(Run(e.Ctx, args, cli.IO{Stdout: &out, Stderr: &errb}), &errb); code != cli.ExitOK || !strings.Contains(out.String(), `"exists":true`) {
			t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
		}
	})
	t.Run("history diff json", func(t *testing.T) {
		out, errs, code := e.replay(t, "history", "--table", "orders", "--pk", "customer-42", "--rk", "r1", "--diff", "--json")
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var got struct {
			Versions []struct {
				Diff *struct {
					Added, Removed, Before, After map[string]any
				} `json:"diff"`
			} `json:"versions"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(got.Versions) != 3 {
			t.Fatalf("%d versions: %s", len(got.Versions), out)
		}
		d0, d1, d2 := got.Versions[0].Diff, got.Versions[1].Diff, got.Versions[2].Diff
		switch {
		case d0 == nil || d1 == nil || d2 == nil:
			t.Fatalf("a version has no diff: %s", out)
		case d0.Added["a"] != 1.0 || d0.Added["gone"] != "x" || d0.Removed != nil:
			t.Errorf("version 0: %+v", *d0)
		case d1.Before["a"] != 1.0 || d1.After["a"] != 2.0 || d1.Added["b"] != "3" || d1.Added["b@odata.type"] != "Edm.Int64" || d1.Removed["gone"] != "x":
			t.Errorf("version 1: %+v", *d1)
		case d2.Added["c"] != true || len(d2.Added) != 1 || d2.Removed != nil || d2.Before != nil:
			t.Errorf("version 2: %+v", *d2)
		}
	})
	t.Run("times have 7 fractional digits", func(t *testing.T) {
		stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*)?(Z|[+-]\d\d:\d\d)`)
		now := time.Now().UTC().Format(time.RFC3339Nano)
		var all string
		for _, args := range [][]string{
			{"asof", "--table", "orders", "--json"},
			{"asof", "--table", "orders", "--time", now},
			{"asof", "--table", "orders", "--time", now, "--json"},
			{"history", "--table", "orders", "--pk", "customer-42", "--rk", "r1", "--json"},
			{"history", "--table", "orders", "--pk", "customer-42", "--rk", "r1"},
			{"blame", "--cmd", "c2", "--json"},
			{"blame", "--cmd", "c2"},
			{"undo", "--cmd", "c3", "--json"},
		} {
			out, errs, code := e.replay(t, args...)
			if code != cli.ExitOK {
				t.Fatalf("%v: exit %d: %s", args, code, errs)
			}
			all += out
		}
		n := 0
		for _, s := range stamp.FindAllString(all, -1) {
			n++
			if !regexp.MustCompile(`\.\d{7}Z$`).MatchString(s) {
				t.Errorf("time %s does not have 7 fractional digits", s)
			}
		}
		if n < 10 {
			t.Errorf("only %d times found in:\n%s", n, all)
		}
	})
	t.Run("undo twice", func(t *testing.T) {
		out, errs, code := e.replay(t, "undo", "--cmd", "c3", "--apply", "--json")
		if code != cli.ExitOK {
			t.Fatalf("apply: exit %d: %s%s", code, out, errs)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if _, ok := got["status"]; ok || got["undoneStatus"] != "applied" || got["applied"] != true {
			t.Errorf("undo --apply --json: want undoneStatus applied, applied true, no status: %s", out)
		}
		out, errs, code = e.replay(t, "undo", "--cmd", "c3", "--apply")
		if code != cli.ExitOK || !strings.Contains(out, "already undone by undo-c3-0") {
			t.Fatalf("second apply: exit %d, want 0 and already undone: %s%s", code, out, errs)
		}
		out, _, code = e.replay(t, "undo", "--cmd", "c3", "--json")
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != cli.ExitOK || got["applied"] != false || got["commands"] != 0.0 {
			t.Errorf("dry run after the undo: exit %d: %s", code, out)
		}
	})
	t.Run("a blocked undo names --force", func(t *testing.T) {
		out, errs, code := e.replay(t, "undo", "--cmd", "c2", "--apply")
		if code != cli.ExitRejected || !strings.Contains(errs, "--force includes them") || strings.Contains(errs, "Force") {
			t.Fatalf("exit %d: %s%s", code, out, errs)
		}
	})
	t.Run("counts in the singular", func(t *testing.T) {
		e.Publish(t, "s1", events.RowOp{Op: events.OpUpsert, RK: "only", Entity: edm.Entity{}})
		// s1 went to orders/customer-42 like the rest: read one row's history,
		// rebuild the first command alone, snapshot one partition.
		checks := []struct {
			args []string
			want string
		}{
			{[]string{"history", "--table", "orders", "--pk", "customer-42", "--rk", "only"}, ": 1 version\n"},
			{[]string{"rebuild", "--table", "orders", "--into", "single1", "--to", "seq:1"}, ": 1 command (1 applied, 0 rejected, 0 duplicates"},
			{[]string{"snapshot", "--table", "orders", "--out", filepath.Join(t.TempDir(), "s.snap")}, "from 1 partition in"},
		}
		for _, c := range checks {
			out, errs, code := e.replay(t, c.args...)
			if code != cli.ExitOK || !strings.Contains(out, c.want) {
				t.Errorf("%v: exit %d, want %q in: %s%s", c.args, code, c.want, out, errs)
			}
		}
	})
}

// TestReplayUndoTimeout: undo --apply with the projector down waits
// --timeout, not a fixed two minutes.
func TestReplayUndoTimeout(t *testing.T) {
	e := startReplayEnv(t)
	e.Publish(t, "c1", upsert("r1", edm.Entity{"a": edm.Int32(1)}))
	e.Stop()
	start := time.Now()
	out, errs, code := e.replay(t, "undo", "--cmd", "c1", "--apply", "--timeout", "1s")
	if code != cli.ExitFailure || !strings.Contains(errs, "within --timeout 1s") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s with --timeout 1s", took)
	}
}
