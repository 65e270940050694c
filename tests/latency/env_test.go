package latency_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/simazure"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/store/stores"
)

var (
	azuriteSrv *azurite.Server
	// projectorBin is the projector command built for this run.
	projectorBin string
)

// TestMain builds the projector command and starts one Azurite.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tablejournal-latency-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	projectorBin = filepath.Join(dir, "projector")
	build := exec.Command("go", "build", "-o", projectorBin, "github.com/tablejournal/tablejournal/cmd/projector")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build cmd/projector:", err)
		return 1
	}
	return azurite.Run(m, &azuriteSrv)
}

// backends are the table stores every benchmark runs on, by name:
// "simazure" is the embedded store behind the simulated Azure account's
// 5 ms round trip (store/simazure, no throttling), which the projector
// command cannot open: there the projector runs in this process
// (projection, with the command's defaults), every other part the same.
var backends = []string{"sqlite", "azurite", "simazure"}

// rawStream is the stream of the raw publishes: the journal's server and
// storage, none of its work.
const rawStream = "LATRAW"

// env is one pipeline: a JetStream server, the projector command running
// in this process against it and a table store, a client of both, and
// what the baselines need (the raw stream, the store).
type env struct {
	srv    *embedded.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	st     store.Store // the projector's store, opened a second time
	tables string      // the projector's --tables
	dir    string
	c      *tj.Client
	stop   func() error    // stops the projector
	sim    *simazure.Store // the simulated account, on backend "simazure"
	echo   *echo           // the pipeline's floor without a projector
}

// startEnv starts a pipeline on backend ("sqlite" or "azurite"); it stops
// when the benchmark ends.
func startEnv(tb testing.TB, backend string) *env {
	tb.Helper()
	ctx := journaltest.Context(tb, 2*time.Minute)
	e := &env{dir: tb.TempDir()}
	e.srv = journaltest.StartServerConfig(tb, embedded.Config{Dir: filepath.Join(e.dir, "jetstream"), Listen: "127.0.0.1:-1"})
	e.nc, e.js = journaltest.Connect(tb, e.srv.ClientURL())
	switch backend {
	case "sqlite":
		e.tables = "sqlite:" + filepath.Join(e.dir, stores.EmbeddedFile)
	case "azurite":
		e.tables = azuriteSrv.ConnectionString()
	case "simazure":
		e.startSimulated(tb, ctx)
	default:
		tb.Fatalf("no backend %q", backend)
	}
	if e.st == nil {
		st, closer, err := stores.Open(ctx, e.tables, e.dir)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { closer.Close() })
		e.st = st
		e.stop = startProjector(tb, append([]string{"--nats", e.srv.ClientURL(), "--tables", e.tables, "--data", e.dir, "--log-level", "warn"},
			projectorArgs()...)...)
	}
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: rawStream, Subjects: []string{"latraw.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
		tb.Fatal(err)
	}
	e.echo = startEcho(tb, e)
	e.c = e.client(tb)
	// The projector is up once a command applies: it creates the streams
	// the client needs, so the first tries may fail.
	waitFor(tb, ctx, "the first command applied", func() error {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := e.c.Apply(wctx, tj.NewCommand(benchTable, "warm").Upsert("r", tj.Entity{"i": tj.Int64(0)}))
		return err
	})
	return e
}

// startSimulated opens the embedded store behind the simulated account's
// round trip (its default 5 ms, no throttling: one request at a time
// never meets Azure's limits) as e.st, and runs a projector on it in this
// process, with the projector command's defaults (projection.Config's
// zero value), until e.stop or the benchmark's end.
func (e *env) startSimulated(tb testing.TB, ctx context.Context) {
	tb.Helper()
	inner, err := sqlite.Open(ctx, filepath.Join(e.dir, stores.EmbeddedFile))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { inner.Close() })
	sim, err := simazure.New(inner, simazure.Config{PartitionRate: -1, AccountRate: -1, Latency: simLatency(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	h := projectiontest.Attach(tb, e.srv.ClientURL(), sim, projectiontest.Options{})
	h.StartProjector(projection.Config{})
	e.st, e.stop, e.sim = sim, h.StopProjector, sim
}

// client connects a new client to e; it closes when the benchmark ends.
func (e *env) client(tb testing.TB) *tj.Client {
	tb.Helper()
	c, err := tj.Connect(context.Background(), e.srv.ClientURL(), tj.WithStore(e.st))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// startProjector runs the projector command with args until the returned
// stop is called (SIGTERM, then its exit) or the benchmark ends.
func startProjector(tb testing.TB, args ...string) (stop func() error) {
	stderr := &lockedBuffer{}
	cmd := exec.Command(projectorBin, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				runErr = errors.Join(errors.New("the projector did not stop within 30s"), <-done)
			}
			if runErr != nil {
				runErr = fmt.Errorf("projector: %w\n%s", runErr, stderr.String())
			}
		})
		return runErr
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Error(err)
		}
	})
	return stop
}

// waitFor calls try until it returns nil, failing tb with its last error
// when ctx ends.
func waitFor(tb testing.TB, ctx context.Context, what string, try func() error) {
	tb.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := try()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("%s: %v (last error: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// projectorArgs are more flags for the projector, from
// $TABLEJOURNAL_BENCH_PROJECTOR_ARGS (split on spaces): "--cache-rows -1"
// measures the path of a partition whose rows are not cached.
func projectorArgs() []string { return strings.Fields(os.Getenv("TABLEJOURNAL_BENCH_PROJECTOR_ARGS")) }

// requests is how many requests of each kind a benchmark round makes:
// $TABLEJOURNAL_BENCH_LATENCY_N, default 300.
func requests() int {
	if n, err := strconv.Atoi(os.Getenv("TABLEJOURNAL_BENCH_LATENCY_N")); err == nil && n > 0 {
		return n
	}
	return 300
}

// simLatency is the simulated account's round trip: its default (5 ms), or
// $TABLEJOURNAL_BENCH_SIM_LATENCY (a duration; "0" for none, which
// measures the projector in this process on the embedded store).
func simLatency(tb testing.TB) time.Duration {
	v := os.Getenv("TABLEJOURNAL_BENCH_SIM_LATENCY")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		tb.Fatalf("TABLEJOURNAL_BENCH_SIM_LATENCY: %v", err)
	}
	if d == 0 {
		return -1
	}
	return d
}
