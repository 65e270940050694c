package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// replayEnv is a pipeline for the CLI tests: a JetStream server, the
// embedded store in a file, a projector in the background.
type replayEnv struct {
	url, tables string
	w           *journal.Writer
	js          jetstream.JetStream
	ctx         context.Context
	stop        func() // stops the projector
	st          store.Store
}

func startReplayEnv(t *testing.T, jcfg ...journal.Config) *replayEnv {
	t.Helper()
	srv := journaltest.StartServerConfig(t, embedded.Config{Dir: t.TempDir(), Listen: "127.0.0.1:-1", NoSync: true})
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, 2*time.Minute)
	path := filepath.Join(t.TempDir(), "tables.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pctx, cancel := context.WithCancel(context.Background())
	cfg := projection.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if len(jcfg) > 0 {
		cfg.Journal = jcfg[0]
	}
	p, err := projection.New(pctx, js, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return &replayEnv{url: srv.ClientURL(), tables: "sqlite:" + path, w: journal.NewWriter(js, ""), js: js, ctx: ctx, stop: stop, st: st}
}

// publish publishes one command and waits for its outcome.
func (e *replayEnv) publish(t *testing.T, id string, ops ...events.RowOp) journal.Outcome {
	t.Helper()
	c := &events.Command{ID: id, Table: "orders", PK: "customer-42", Ops: ops}
	res, err := e.w.Publish(e.ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	o, err := journal.NewOutcomes(e.js).Await(e.ctx, id, res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// replay runs the replay CLI with the env's connection flags after the
// subcommand.
func (e *replayEnv) replay(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	full := append([]string{args[0], "--nats", e.url, "--tables", e.tables}, args[1:]...)
	var out, errb bytes.Buffer
	code = Exit(Replay(e.ctx, full, IO{Stdout: &out, Stderr: &errb}), &errb)
	return out.String(), errb.String(), code
}

func upsert(rk string, props events.Entity) events.RowOp {
	return events.RowOp{Op: events.OpUpsert, RK: rk, Entity: props}
}

func TestReplayCLI(t *testing.T) {
	e := startReplayEnv(t)
	o1 := e.publish(t, "c1", upsert("order-7", events.Entity{"status": events.String("new"), "qty": events.Int64(9007199254740993)}))
	e.publish(t, "c2", upsert("order-7", events.Entity{"status": events.String("shipped"), "qty": events.Int64(9007199254740993)}),
		upsert("order-8", events.Entity{"total": events.Double(12.5)}))
	e.publish(t, "c3", events.RowOp{Op: events.OpDelete, RK: "order-8"})

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
		if code != ExitRejected || !strings.Contains(out, "CONFLICT, changed later by c2") {
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
		if code != 0 || !strings.Contains(out, "loaded 5 rows") {
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
			if code := Exit(Replay(e.ctx, args, IO{Stdout: &out, Stderr: &errb}), &errb); code != ExitUsage {
				t.Errorf("%v: exit %d, want %d: %s", args, code, ExitUsage, errb.String())
			}
		}
	})
}

// TestReplayProgress checks that rebuild draws its progress bar on a
// terminal stderr, and prints nothing there otherwise.
func TestReplayProgress(t *testing.T) {
	e := startReplayEnv(t)
	for i := range 20 {
		e.publish(t, fmt.Sprintf("p%d", i), upsert(fmt.Sprintf("r%d", i%3), events.Entity{"n": events.Int32(int32(i))}))
	}
	for _, tty := range []bool{true, false} {
		var out, bar bytes.Buffer
		stdio := IO{Stdout: &out, Stderr: &bar, IsTerminal: func(w io.Writer) bool { return tty && w == &bar }}
		err := Replay(e.ctx, []string{"rebuild", "--nats", e.url, "--tables", e.tables, "--table", "orders", "--into", fmt.Sprintf("copy%v", tty)}, stdio)
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
