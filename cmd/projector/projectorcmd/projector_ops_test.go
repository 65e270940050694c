package projectorcmd

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/metrics"
	"github.com/tablejournal/tablejournal/cmd/internal/metrics/metricstest"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// projectorCmd is the projector command running in the background.
type projectorCmd struct {
	base   string // http://host:port of --metrics-addr
	stderr *projectiontest.SyncBuffer
	stop   func() error
}

var metricsLine = regexp.MustCompile(`metrics=http://([^ ]+)/metrics`)

// startProjectorCmd runs `projector args... --metrics-addr 127.0.0.1:0` until
// stop or the end of the test, and returns once its startup line names
// the metrics address.
func startProjectorCmd(t *testing.T, args ...string) *projectorCmd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &projectorCmd{stderr: &projectiontest.SyncBuffer{}}
	args = append(args, "--metrics-addr", "127.0.0.1:0")
	exited := make(chan struct{})
	var runErr error
	go func() { runErr = Run(ctx, args, cli.IO{Stdout: io.Discard, Stderr: p.stderr}); close(exited) }()
	p.stop = func() error {
		cancel()
		select {
		case <-exited:
			return runErr
		case <-time.After(30 * time.Second):
			return fmt.Errorf("the projector did not stop within 30s")
		}
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("projector: %v\n%s", err, p.stderr)
		}
	})
	wctx := journaltest.Context(t, 30*time.Second)
	projectiontest.WaitFor(t, wctx, "the projector's startup line", func() (bool, error) {
		select {
		case <-exited:
			t.Fatalf("projector exited: %v\n%s", runErr, p.stderr)
		default:
		}
		m := metricsLine.FindStringSubmatch(p.stderr.String())
		if m == nil {
			return false, nil
		}
		p.base = "http://" + m[1]
		return true, nil
	})
	return p
}

// get returns the status code and body of GET base+path.
func (p *projectorCmd) get(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func (p *projectorCmd) scrape(ctx context.Context) (metricstest.Families, error) {
	return metricstest.Scrape(ctx, p.base+"/metrics")
}

// waitStatus polls GET path until it answers code.
func (p *projectorCmd) waitStatus(t *testing.T, ctx context.Context, path string, code int) string {
	t.Helper()
	var body string
	projectiontest.WaitFor(t, ctx, fmt.Sprintf("GET %s answers %d", path, code), func() (bool, error) {
		got, b, err := p.get(ctx, path)
		body = b
		return got == code, err
	})
	return body
}

// metricsEnv is a harness (server, journal of 4 shards, writer) whose
// journal the projector command projects into an embedded store file.
type metricsEnv struct {
	h    *projectiontest.Harness
	path string // the embedded store's file
}

const metricsShards = 4

func startMetricsEnv(t *testing.T) *metricsEnv {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tables.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := projectiontest.Start(t, st, projectiontest.Options{Journal: journal.Config{Shards: metricsShards}})
	return &metricsEnv{h: h, path: path}
}

// projector starts the projector command on e's server and store.
func (e *metricsEnv) projector(t *testing.T, args ...string) *projectorCmd {
	t.Helper()
	return startProjectorCmd(t, append([]string{"--nats", e.h.Server.ClientURL(), "--tables", "sqlite:" + e.path,
		"--journal-shards", fmt.Sprint(metricsShards)}, args...)...)
}

// workload returns n commands of a seeded workload over 8 partitions:
// applied, rejected and duplicate ones.
func workload(seed uint64, n int) []*events.Command {
	return projectiontest.NewWorkload(seed, "orders", 8, 10).Take(n)
}

// lockStore takes the embedded store's write lock as another process
// would, and returns its release: the projector's writes wait meanwhile.
func lockStore(t *testing.T, path string) (release func()) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Error(err)
			}
			conn.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestProjectorMetrics runs the projector command with --metrics-addr,
// publishes a workload while the store is locked, and scrapes /metrics
// while the projector is behind (lag in messages and seconds on the
// shards) and after it caught up (lag 0 on every shard), checking
// commands_total by status against the model's outcomes.
func TestProjectorMetrics(t *testing.T) {
	t.Parallel()
	ctx := journaltest.Context(t, 2*time.Minute)
	e := startMetricsEnv(t)
	p := e.projector(t)
	p.waitStatus(t, ctx, "/readyz", http.StatusOK)

	release := lockStore(t, e.path)
	e.h.PublishAll(ctx, workload(11, 1500))
	head, err := e.h.Journal.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var behind metricstest.Families
	// The store stays locked until release, so the projector stays
	// behind: the wait is bounded by the test's deadline alone (a 20 s
	// bound of its own ran out under -race on a loaded machine before the
	// child projector had reported its lag).
	projectiontest.WaitFor(t, ctx, "/metrics shows the projector behind", func() (bool, error) {
		f, err := p.scrape(ctx)
		if err != nil {
			return false, err
		}
		msgs, secs := f.ByLabel(metrics.NameLagMessages, "shard"), f.ByLabel(metrics.NameLagSeconds, "shard")
		var total, maxSecs float64
		for sh, n := range msgs {
			total += n
			maxSecs = max(maxSecs, secs[sh])
		}
		behind = f
		return total > 0 && maxSecs > 0, nil
	})
	if applied := behind.ByLabel(metrics.NameCommands, "status")["applied"]; applied != 0 {
		t.Errorf("%v commands applied while the store was locked", applied)
	}
	release()
	e.h.WaitProjected(ctx)
	model := e.h.Model(ctx)
	want := map[string]float64{"applied": 0, "rejected": 0, "duplicate": 0, "skipped": 0}
	for _, st := range model.Status {
		want[st]++
	}
	for _, st := range []string{"applied", "rejected", "duplicate"} {
		if want[st] == 0 {
			t.Fatalf("the workload has no %s command: %v", st, want)
		}
	}

	var f metricstest.Families
	projectiontest.WaitFor(t, ctx, "/metrics shows every shard caught up", func() (bool, error) {
		var err error
		if f, err = p.scrape(ctx); err != nil {
			return false, err
		}
		msgs, secs := f.ByLabel(metrics.NameLagMessages, "shard"), f.ByLabel(metrics.NameLagSeconds, "shard")
		if len(msgs) != metricsShards || len(secs) != metricsShards {
			return false, fmt.Errorf("lag of %d and %d shards, want %d", len(msgs), len(secs), metricsShards)
		}
		for sh := range msgs {
			if msgs[sh] != 0 || secs[sh] != 0 {
				return false, fmt.Errorf("shard %s: lag %v messages, %vs", sh, msgs[sh], secs[sh])
			}
		}
		return true, nil
	})
	got := f.ByLabel(metrics.NameCommands, "status")
	for st, n := range want {
		if got[st] != n {
			t.Errorf("commands_total{status=%q} = %v, the model has %v", st, got[st], n)
		}
	}
	if owned, _ := f.Value(metrics.NameShardsOwned); owned != metricsShards {
		t.Errorf("shards_owned = %v, want %d", owned, metricsShards)
	}
	var top float64
	for _, seq := range f.ByLabel(metrics.NameAppliedSequence, "shard") {
		top = max(top, seq)
	}
	if top != float64(head) {
		t.Errorf("greatest applied_sequence %v, journal head %d", top, head)
	}
	if n, _ := f.Histogram(metrics.NameApplyDelay); n != uint64(len(model.Status)) {
		t.Errorf("apply_delay_seconds counts %d outcomes, want %d", n, len(model.Status))
	}
	if n, sum := f.Histogram(metrics.NameBatchCommands); n == 0 || sum != want["applied"] {
		t.Errorf("batch_commands: %d transactions of %v commands in all, want %v applied", n, sum, want["applied"])
	}
	if n, _ := f.Histogram(metrics.NameBatchSeconds); n == 0 {
		t.Error("batch_seconds observed no batch")
	}
	if n, _ := f.Histogram(metrics.NameStoreRequest, "op", "transact", "result", "ok"); n == 0 {
		t.Error("store_request_seconds observed no transaction")
	}
}

// TestProjectorReadyz: /readyz answers 503 with the reason while the NATS
// server is down and 200 again once it is back; /healthz answers 200
// throughout.
func TestProjectorReadyz(t *testing.T) {
	t.Parallel()
	ctx := journaltest.Context(t, 2*time.Minute)
	e := startMetricsEnv(t)
	p := e.projector(t)
	if body := p.waitStatus(t, ctx, "/readyz", http.StatusOK); body != "ok\n" {
		t.Errorf("/readyz body %q, want ok", body)
	}
	e.h.PublishAll(ctx, workload(5, 50))
	e.h.WaitProjected(ctx)

	cfg := e.h.Server.Config()
	e.h.Server.Shutdown()
	body := p.waitStatus(t, ctx, "/readyz", http.StatusServiceUnavailable)
	if !regexp.MustCompile(`(?m)^nats: not connected to NATS`).MatchString(body) {
		t.Errorf("/readyz body while NATS is down: %q, want the reason", body)
	}
	if code, body, err := p.get(ctx, "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz while NATS is down: %d %q %v, want 200", code, body, err)
	}
	e.h.Server = journaltest.StartServerConfig(t, cfg)
	p.waitStatus(t, ctx, "/readyz", http.StatusOK)
	if code, body, err := p.get(ctx, "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz after NATS is back: %d %q %v, want 200", code, body, err)
	}
	// And it projects again.
	e.h.PublishAll(ctx, workload(6, 50))
	e.h.WaitProjected(ctx)
}
