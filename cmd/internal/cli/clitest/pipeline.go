package clitest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Pipeline is a pipeline for the command tests: a JetStream server, the
// embedded store in a file, a projector in the background. It is a layer
// over projectiontest.Pipeline.
type Pipeline struct {
	URL    string // the JetStream server's client URL
	Tables string // the --tables of the store: sqlite:PATH
	W      *journal.Writer
	JS     jetstream.JetStream
	Ctx    context.Context
	Stop   func() // stops the projector
	Store  store.Store

	p *projectiontest.Pipeline
}

// StartPipeline starts a Pipeline that t's cleanup stops; a journal
// configuration, if given, is the projector's (AllowMsgDelete, say).
func StartPipeline(t *testing.T, jcfg ...journal.Config) *Pipeline {
	t.Helper()
	ctx := journaltest.Context(t, 2*time.Minute)
	var cfg projection.Config
	if len(jcfg) > 0 {
		cfg.Journal = jcfg[0]
	}
	p, err := projectiontest.StartPipeline(ctx, nil, projectiontest.PipelineConfig{Dir: t.TempDir(), Journal: cfg.Journal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := p.RunProjector(cfg); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		p.StopProjector()
	}
	return &Pipeline{URL: p.URL(), Tables: p.Tables, W: journal.NewWriter(p.JS, ""), JS: p.JS, Ctx: ctx, Stop: stop, Store: p.Store, p: p}
}

// RunProjector runs another projector with cfg (its Logger discarding)
// once Stop stopped the first; Stop stops it too.
func (e *Pipeline) RunProjector(t *testing.T, cfg projection.Config) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := e.p.RunProjector(cfg); err != nil {
		t.Fatal(err)
	}
}

// Publish publishes one command and waits for its outcome.
func (e *Pipeline) Publish(t *testing.T, id string, ops ...events.RowOp) wire.Outcome {
	t.Helper()
	c := &events.Command{ID: id, Table: "orders", PK: "customer-42", Ops: ops}
	res, err := e.W.Publish(e.Ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	o, err := outcomes.NewReader(e.JS).Await(e.Ctx, id, res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	e.waitApplied(t, res.Seq)
	return o
}

// waitApplied waits until the projector has acknowledged seq, so that
// "applied through", the point replay's commands take by default, has
// reached it: a command's outcome comes before its acknowledgement (and
// the reply to a waiting client before both, SPEC §5).
func (e *Pipeline) waitApplied(t *testing.T, seq uint64) {
	t.Helper()
	m, err := e.p.Journal.Get(e.Ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	_, shard, _, err := wire.ParseJournalSubject(m.Subject)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := e.JS.Stream(e.Ctx, e.p.Journal.Name())
	if err != nil {
		t.Fatal(err)
	}
	for {
		a, err := journal.AppliedThrough(e.Ctx, stream, wire.DefaultDurable, shard)
		if err != nil {
			t.Fatal(err)
		}
		if a.Through >= seq {
			return
		}
		select {
		case <-e.Ctx.Done():
			t.Fatalf("seq %d not acknowledged by the projector: applied through %d", seq, a.Through)
		case <-time.After(5 * time.Millisecond): // a pause between polls of the consumer
		}
	}
}

// Replay runs the replay command run with the pipeline's connection flags
// after the subcommand.
func (e *Pipeline) Replay(t *testing.T, run cli.Command, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	full := append([]string{args[0], "--nats", e.URL, "--tables", e.Tables}, args[1:]...)
	return Run(e.Ctx, run, full, cli.IO{})
}

// Run runs cmd with args and returns its output and exit code. stdio's
// Stdout and Stderr are replaced by buffers; its other fields are kept.
func Run(ctx context.Context, cmd cli.Command, args []string, stdio cli.IO) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	stdio.Stdout, stdio.Stderr = &out, &errb
	code = cli.Exit(cmd(ctx, args, stdio), &errb)
	return out.String(), errb.String(), code
}

// Help returns the --help text that cmd prints for args, failing t if the
// command does not exit 0.
func Help(t *testing.T, cmd cli.Command, args ...string) string {
	t.Helper()
	out, errs, code := Run(context.Background(), cmd, args, cli.IO{})
	if code != cli.ExitOK {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	return out
}

// Once fails t unless line stands exactly once, as a whole line, in text.
func Once(t *testing.T, text, line string) {
	t.Helper()
	if n := strings.Count(text, line+"\n"); n != 1 {
		t.Errorf("%q stands %d times in --help, want once:\n%s", line, n, text)
	}
}

// UnreachableNATS is a URL nothing listens on: commands that must fail
// before connecting are given it, so that a connection attempt shows as
// exit 1 rather than reaching a server someone runs locally.
const UnreachableNATS = "nats://127.0.0.1:1"

// CommandsFile writes content into a new file of commands (JSON lines)
// in a temporary folder and returns its path.
func CommandsFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "commands.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// HelpUsageVersion checks the --help, -h, flag mistakes and --version of
// the command run, named name, with the arguments pre (its subcommand)
// before the flags: the usage on stdout alone and exit 0; a bad flag is
// one line on stderr naming the flag as typed, and exit 2; the version
// names the program and the module.
func HelpUsageVersion(t *testing.T, name string, run cli.Command, pre []string) {
	t.Helper()
	t.Setenv(cli.EnvNATS, UnreachableNATS)
	exec := func(args ...string) (string, string, int) {
		return Run(context.Background(), run, append(append([]string(nil), pre...), args...), cli.IO{})
	}
	for _, h := range []string{"--help", "-h"} {
		out, errs, code := exec(h)
		if code != cli.ExitOK || !strings.Contains(out, "Usage") || errs != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want the usage on stdout alone", h, code, head(out), errs)
		}
		if len(pre) > 0 || name == "projector" {
			if !strings.Contains(out, "--nats") && !strings.Contains(out, "-nats") {
				t.Errorf("%s: no flags listed: %s", h, head(out))
			}
		}
	}
	for _, bad := range [][]string{{"--no-such-flag"}, {"--timeout", "soon"}, {"--json=maybe"}} {
		if name == "projector" && bad[0] != "--no-such-flag" {
			continue // no --timeout, no --json
		}
		if name == "replay" && len(pre) == 0 && bad[0] == "--timeout" {
			continue
		}
		out, errs, code := exec(bad...)
		if code != cli.ExitUsage || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr", bad, code, out, errs, cli.ExitUsage)
		}
		flag := strings.SplitN(strings.TrimPrefix(bad[0], "--"), "=", 2)[0]
		if !strings.Contains(errs, "--"+flag) {
			t.Errorf("%v: the error does not name --%s as typed: %q", bad, flag, errs)
		}
	}
	out, errs, code := exec("--version")
	if code != cli.ExitOK || !strings.HasPrefix(out, name+" github.com/tablejournal/tablejournal ") || errs != "" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func head(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// OpensWithUsage fails t unless the --help of subcommand s of program
// prog (run) opens with s's usage line.
func OpensWithUsage(t *testing.T, prog string, run cli.Command, s cli.Spec) {
	t.Helper()
	if own := Help(t, run, s.Name, "--help"); !strings.HasPrefix(own, "Usage: "+s.Line(prog)+"\n") {
		t.Errorf("%s %s --help does not open with its usage line:\n%s", prog, s.Name, own)
	}
}
