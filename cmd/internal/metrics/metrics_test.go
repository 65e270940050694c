package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tablejournal/tablejournal/cmd/internal/metrics/metricstest"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

var azuriteSrv *azurite.Server

func TestMain(m *testing.M) { os.Exit(azurite.Run(m, &azuriteSrv)) }

// clock is a settable clock for Metrics.now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestMetrics() (*Metrics, *clock) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	m := New()
	m.now = c.now
	return m, c
}

// TestLag drives the Observer through the life of a shard and checks its
// gauges: idle, behind, busy on a batch, caught up, stopped.
func TestLag(t *testing.T) {
	m, c := newTestMetrics()
	t0 := c.now()
	type want struct {
		applied, pending uint64
		lagSecs          float64
	}
	steps := []struct {
		name string
		do   func()
		want *want // nil: the shard has no series
	}{
		{"started with a backlog", func() { m.ShardStarted(3, 10, 500) }, &want{10, 500, 0}},
		{"fetched the oldest, 20s old", func() {
			c.add(20 * time.Second)
			m.Fetched(3, projection.Fetch{Messages: 100, Pending: 500, Oldest: t0})
		}, &want{10, 500, 20}},
		{"busy on the batch: the lag grows", func() { c.add(5 * time.Second) }, &want{10, 500, 25}},
		{"batch done, more behind it", func() {
			m.BatchDone(3, projection.Batch{Applied: 120, Commands: 100, Pending: 400, Last: t0.Add(time.Second)})
		}, &want{120, 400, 24}},
		{"fetched the rest", func() {
			m.Fetched(3, projection.Fetch{Messages: 400, Pending: 400, Oldest: t0.Add(2 * time.Second)})
		}, &want{120, 400, 23}},
		{"caught up", func() {
			c.add(time.Second)
			m.BatchDone(3, projection.Batch{Applied: 600, Commands: 400, Last: t0.Add(3 * time.Second)})
		}, &want{600, 0, 0}},
		{"idle: a fetch found nothing", func() { c.add(time.Minute); m.Fetched(3, projection.Fetch{}) }, &want{600, 0, 0}},
		{"a fetch found nothing though 7 are pending (a busy server)", func() {
			m.Fetched(3, projection.Fetch{Pending: 7, Oldest: c.now().Add(-3 * time.Second)})
		}, &want{600, 7, 3}},
		{"a new command waits", func() {
			m.Fetched(3, projection.Fetch{Messages: 1, Pending: 1, Oldest: c.now().Add(-time.Second / 2)})
		}, &want{600, 1, 0.5}},
		{"stopped by a failure", func() { m.ShardStopped(3, true) }, nil},
	}
	for _, s := range steps {
		s.do()
		snap := m.Snapshot()
		if s.want == nil {
			if len(snap.Shards) != 0 {
				t.Errorf("%s: shards %+v, want none", s.name, snap.Shards)
			}
			continue
		}
		if len(snap.Shards) != 1 {
			t.Fatalf("%s: shards %+v, want shard 3", s.name, snap.Shards)
		}
		got := snap.Shards[0]
		if got.Shard != 3 || got.Applied != s.want.applied || got.Pending != s.want.pending || got.LagSeconds != s.want.lagSecs {
			t.Errorf("%s: %+v, want applied %d, pending %d, lag %vs", s.name, got, s.want.applied, s.want.pending, s.want.lagSecs)
		}
	}
	if n := testutil.ToFloat64(m.shardFailures); n != 1 {
		t.Errorf("shard_failures_total = %v, want 1", n)
	}
	if n := testutil.CollectAndCount(m.batchSeconds); n != 1 {
		t.Errorf("batch_seconds has %d series", n)
	}
}

// faultyStore makes the next calls of the wrapped store fail with err.
type faultyStore struct {
	store.Store
	mu   sync.Mutex
	fail int
	err  error
}

func (f *faultyStore) injected() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return f.err
	}
	return nil
}

func (f *faultyStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	if err := f.injected(); err != nil {
		return nil, err
	}
	return f.Store.Transact(ctx, table, pk, ops)
}

// TestStoreRequests measures both backends alike through the wrapper: each
// round trip lands in store_request_seconds with its op and result, busy
// answers count as retries, and readiness follows the store's answers.
func TestStoreRequests(t *testing.T) {
	for _, b := range projectiontest.Backends(azuriteSrv.ConnectionString()) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			m, c := newTestMetrics()
			faulty := &faultyStore{Store: b.Open(t), err: fmt.Errorf("injected: %w", store.ErrBusy)}
			projectiontest.SkipLayoutCheck(t, "measured") // plain rows, not the versioned layout
			s := m.Store(faulty)
			ready := m.StoreCheck(5*time.Second, 30*time.Second)
			if err := ready.Check(); err == nil || !strings.Contains(err.Error(), "not answered yet") {
				t.Errorf("readiness before any answer: %v", err)
			}
			if err := s.CreateTable(ctx, "measured"); err != nil {
				t.Fatal(err)
			}
			if err := ready.Check(); err != nil {
				t.Errorf("readiness after an answer: %v", err)
			}
			ins := []store.Op{{Kind: store.Insert, RK: "r", Props: edm.Entity{"n": edm.Int64(1)}}}
			if _, err := s.Transact(ctx, "measured", "p", ins); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Transact(ctx, "measured", "p", ins); !errors.Is(err, store.ErrExists) {
				t.Fatalf("insert twice: %v", err)
			}
			if _, err := s.Get(ctx, "measured", "p", "missing"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("get missing: %v", err)
			}
			if _, err := s.Query(ctx, "measured", store.Query{PK: "p"}); err != nil {
				t.Fatal(err)
			}
			c.add(31 * time.Second)
			faulty.fail = 2
			for range 2 {
				if _, err := s.Transact(ctx, "measured", "p", ins); !errors.Is(err, store.ErrBusy) {
					t.Fatalf("injected busy: %v", err)
				}
			}
			err := ready.Check()
			if err == nil || !strings.Contains(err.Error(), "not answered for 31s; it answers busy: injected: store busy") {
				t.Errorf("readiness while only busy answers come: %v", err)
			}

			srv := httptestServer(t, m)
			f, err := metricstest.Scrape(ctx, srv+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct {
				op, result string
				n          uint64
			}{{OpTransact, ResultOK, 1}, {OpTransact, ResultConflict, 1}, {OpTransact, ResultBusy, 2},
				{OpGet, ResultOK, 1}, {OpQuery, ResultOK, 1}, {OpGet, ResultError, 0}} {
				if n, _ := f.Histogram(NameStoreRequest, "op", w.op, "result", w.result); n != w.n {
					t.Errorf("store_request_seconds{op=%s,result=%s} counts %d, want %d", w.op, w.result, n, w.n)
				}
			}
		})
	}
}

// etagStore reports an etag for every transaction.
type etagStore struct{ store.Store }

func (e etagStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	_, err := e.Store.Transact(ctx, table, pk, ops)
	return []string{"W/\"1\""}, err
}

// The measured store passes on the etags of what it wraps (none from a
// store that reports none) and measures each Transact as a transaction.
func TestStorePassesETags(t *testing.T) {
	m, _ := newTestMetrics()
	for _, c := range []struct {
		st   store.Store
		want int
	}{{etagStore{nopStore{}}, 1}, {nopStore{}, 0}} {
		if etags, err := m.Store(c.st).Transact(context.Background(), "t", "p", nil); err != nil || len(etags) != c.want {
			t.Fatalf("Transact through %T: %v %v, want %d etags", c.st, etags, err, c.want)
		}
	}
	f, err := metricstest.Scrape(context.Background(), httptestServer(t, m)+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Histogram(NameStoreRequest, "op", OpTransact, "result", ResultOK); n != 2 {
		t.Errorf("Transact measured %d times, want 2", n)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		op   string
		err  error
		want string
	}{
		{OpGet, nil, ResultOK},
		{OpGet, store.ErrNotFound, ResultOK},
		{OpQuery, fmt.Errorf("q: %w", store.ErrTableNotFound), ResultOK},
		{OpTransact, &store.TxError{Err: store.ErrExists}, ResultConflict},
		{OpTransact, &store.TxError{Err: store.ErrPrecondition}, ResultConflict},
		{OpTransact, &store.TxError{Err: store.ErrNotFound}, ResultConflict},
		{OpTransact, store.ErrBusy, ResultBusy},
		{OpGet, store.ErrBusy, ResultBusy},
		{OpTransact, store.ErrTooLarge, ResultError},
		{OpTransact, errors.New("connection refused"), ResultError},
	} {
		if got := classify(c.op, c.err); got != c.want {
			t.Errorf("classify(%s, %v) = %s, want %s", c.op, c.err, got, c.want)
		}
	}
}

// httptestServer serves m on a free port with readiness checks the test
// can flip, and returns its base URL.
func httptestServer(t *testing.T, m *Metrics, ready ...Check) string {
	t.Helper()
	srv, err := m.Listen("127.0.0.1:0", nil, ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	return "http://" + srv.Addr()
}

// TestServer: /metrics has every metric of SPEC §9 and the Go and process
// collectors; /readyz says 503 and why while a check fails.
func TestServer(t *testing.T) {
	ctx := context.Background()
	m, clk := newTestMetrics()
	m.ShardStarted(0, 0, 0)
	var st projection.Stats
	st.Sweeps.Set(0, clk.now().Add(-90*time.Second))
	st.StoreRetries.Add(3)
	st.FenceConflicts.Add(2)
	st.Disagreements.Add(1)
	st.Behind.Add(wire.BehindPartition{Table: "orders", PK: "p2", TableSeq: 2, AppliedSeq: 4, Cmd: "c4"})
	m.SetStats(&st)
	m.Retry(projection.RetryPublish)
	var mu sync.Mutex
	var why error
	srv := httptestServer(t, m, Check{Name: "thing", Check: func() error { mu.Lock(); defer mu.Unlock(); return why }})
	f, err := metricstest.Scrape(ctx, srv+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{NameShardsOwned, NameAppliedSequence, NameLagMessages, NameLagSeconds, NameCommands,
		NameBatchCommands, NameBatchSeconds, NameApplyDelay, NameStoreRequest, NameRetries, NameShardFailures,
		"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if _, ok := f[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	retries := f.ByLabel(NameRetries, "reason")
	want := map[string]float64{RetryStoreBusy: 3, RetryFenceConflict: 2, projection.RetryPublish: 1,
		projection.RetryFetch: 0, projection.RetryConsumer: 0, projection.RetryDeliveryGap: 0}
	if fmt.Sprint(retries) != fmt.Sprint(want) {
		t.Errorf("retries_total by reason %v, want %v", retries, want)
	}
	if n, _ := f.Value(NameDisagreements); n != 1 {
		t.Errorf("disagreements_total = %v, want 1", n)
	}
	if n, _ := f.Value(NameStoreBehind); n != 1 {
		t.Errorf("%s = %v, want 1", NameStoreBehind, n)
	}
	if n, ok := f.Value(NameHeldPartitions); !ok || n != 0 {
		t.Errorf("%s = %v (exported %v), want 0", NameHeldPartitions, n, ok)
	}
	if ages := f.ByLabel(NameSweepAge, "shard"); fmt.Sprint(ages) != fmt.Sprint(map[string]float64{"0": 90}) {
		t.Errorf("%s by shard %v, want shard 0 swept 90 s ago", NameSweepAge, ages)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	mu.Lock()
	why = errors.New("it is off")
	mu.Unlock()
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || body != "thing: it is off\n" {
		t.Errorf("/readyz with a failing check: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
}

// TestReport: while there is work a summary line says the rate, the
// outcomes and the lag.
func TestReport(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New()
	var out lockedBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	done := make(chan struct{})
	go func() { defer close(done); m.Report(ctx, log, ReportConfig{Summary: 10 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()

	m.ShardStarted(1, 0, 5)
	summaryLine := regexp.MustCompile(`level=INFO msg=projecting rate=\d+ applied=[1-9]\d* rejected=[1-9]\d* duplicate=0 lag_messages=5 lag_seconds=0 shards=1\n`)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	projectiontest.WaitFor(t, wctx, "a summary of the work", func() (bool, error) {
		// Work goes on until a summary has seen some.
		m.Handled(wire.StatusApplied, time.Millisecond)
		m.Handled(wire.StatusRejected, time.Millisecond)
		return summaryLine.MatchString(out.String()), nil
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func TestSummaryOnlyWithWork(t *testing.T) {
	at := time.Now()
	idle := Snapshot{At: at, Commands: map[wire.Status]uint64{wire.StatusApplied: 7}}
	later := Snapshot{At: at.Add(30 * time.Second), Commands: map[wire.Status]uint64{wire.StatusApplied: 7},
		Shards: []ShardSnapshot{{Shard: 0}}}
	if attrs, ok := summary(idle, later); ok {
		t.Errorf("summary while idle: %v", attrs)
	}
	later.Commands[wire.StatusApplied] = 67
	attrs, ok := summary(idle, later)
	if !ok || fmt.Sprint(attrs[:4]) != "[rate 2 applied 60]" {
		t.Errorf("summary of 60 commands in 30s: %v %v", attrs, ok)
	}
	later.Commands[wire.StatusApplied] = 7
	later.Shards[0].Pending = 3
	if _, ok := summary(idle, later); !ok {
		t.Error("no summary while commands are pending")
	}
}

func TestRate(t *testing.T) {
	t0 := time.Now()
	var h []sample
	for i := range 20 { // one sample every 5s, 10 commands/s
		h = addSample(h, sample{t0.Add(time.Duration(i) * 5 * time.Second), uint64(50 * i)})
	}
	if got := rate(h); got != 10 {
		t.Errorf("rate %v, want 10", got)
	}
	if span := h[len(h)-1].at.Sub(h[0].at); span != rateWindow {
		t.Errorf("samples span %v, want %v", span, rateWindow)
	}
	h = addSample(h, sample{t0.Add(100 * time.Second), 3}) // restarted here
	if len(h) != 1 || rate(h) != 0 {
		t.Errorf("after a restart: %v, rate %v", h, rate(h))
	}
}

// nopStore answers every request at once, so that BenchmarkObserver
// measures the metrics alone.
type nopStore struct{ store.Store }

func (nopStore) Transact(context.Context, string, string, []store.Op) ([]string, error) {
	return nil, nil
}

// BenchmarkObserver measures what metrics add per command on the hot path,
// from as many goroutines as the projector runs: one outcome (Handled) and
// one measured store round trip. Compare ns/op with the projector's cost
// per command (tens of microseconds).
func BenchmarkObserver(b *testing.B) {
	m := New()
	s := m.Store(nopStore{})
	ctx := context.Background()
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Handled(wire.StatusApplied, time.Millisecond)
			_, _ = s.Transact(ctx, "t", "p", nil)
		}
	})
}
