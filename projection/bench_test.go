package projection_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/proccpu"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// projectCommands is the workload of one round of BenchmarkProjectSpread and
// BenchmarkProjectHot per backend: Azurite answers in milliseconds, SQLite in
// microseconds.
var projectCommands = map[string]int{"sqlite": 20_000, "azurite": 3_000}

// spreadPartitions is the number of partitions BenchmarkProjectSpread
// spreads its commands over.
const spreadPartitions = 1000

// BenchmarkProjectSpread measures the projector's throughput for
// single-row upserts spread over 1,000 partitions; see benchProject.
func BenchmarkProjectSpread(b *testing.B) {
	benchProject(b, func(i int) string { return fmt.Sprintf("p%04d", i%spreadPartitions) })
}

// BenchmarkProjectHot measures the projector's throughput for single-row
// upserts all in one partition; see benchProject.
func BenchmarkProjectHot(b *testing.B) {
	benchProject(b, func(int) string { return "hot" })
}

// benchProject runs, per backend, rounds of: publish N single-row upserts
// (command i upserts its own new row in partition pk(i)), untimed; start a
// projector and wait until every command has an outcome, timed; then write
// the same rows into a scratch table of the same store with raw
// store.Transact calls, each partition's rows in transactions of up to 100
// (a transaction holds one partition, so 20 rows per partition make 20-row
// transactions), the best the store can do with those rows, timed apart.
//
// It reports cmds/s, that baseline as batched-entities/s, their ratio
// (ratio-vs-batched, target >= 0.7; every command writes one entity, so
// the ratio is the projector's efficiency at writing rows), and what the
// projector asked of the store: commands per transaction and reads per
// command; and the CPU this process spent per command projecting
// (cpu-µs/cmd: projector, in-process JetStream server and store) next to
// the baseline's per row (batched-cpu-µs/row), and their ratio
// (cpu-x-batched, lower is better); and the CPU of journalFloor per command,
// the JetStream work alone (floor-cpu-µs/cmd), over the baseline's per row
// (cpu-x-batched-floor): the least cpu-x-batched can be; and the projector's
// CPU over the two together (cpu-x-floor-plus-batched, issue 39's target
// 1.25: what a projector costs beyond the JetStream work the contract asks
// and the store's own). ns/op is the time of one round's projection.
func benchProject(b *testing.B, pk func(i int) string) {
	for _, be := range backends() {
		b.Run(be.Name, func(b *testing.B) {
			n := projectCommands[be.Name]
			var proj, base, cpu, baseCPU, floorCPU time.Duration
			var txs, reads int64
			b.StopTimer()
			for range b.N {
				r := projectRound(b, be, n, pk)
				proj += r.projection
				base += r.batched
				cpu += r.cpu
				baseCPU += r.batchedCPU
				floorCPU += r.floorCPU
				txs += r.txs
				reads += r.reads
			}
			cmds := float64(n * b.N)
			rate, baseRate := cmds/proj.Seconds(), cmds/base.Seconds()
			b.ReportMetric(rate, "cmds/s")
			b.ReportMetric(baseRate, "batched-entities/s")
			b.ReportMetric(rate/baseRate, "ratio-vs-batched")
			b.ReportMetric(cmds/float64(txs), "cmds/tx")
			b.ReportMetric(float64(reads)/cmds, "reads/cmd")
			if cpu > 0 && baseCPU > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/cmds, "cpu-µs/cmd")
				b.ReportMetric(float64(baseCPU.Microseconds())/cmds, "batched-cpu-µs/row")
				b.ReportMetric(cpu.Seconds()/baseCPU.Seconds(), "cpu-x-batched")
				b.ReportMetric(float64(floorCPU.Microseconds())/cmds, "floor-cpu-µs/cmd")
				b.ReportMetric(floorCPU.Seconds()/baseCPU.Seconds(), "cpu-x-batched-floor")
				b.ReportMetric(cpu.Seconds()/(floorCPU+baseCPU).Seconds(), "cpu-x-floor-plus-batched")
			}
		})
	}
}

type projectResult struct {
	projection, batched time.Duration
	cpu, batchedCPU     time.Duration // this process's CPU in each
	floorCPU            time.Duration // journalFloor's: the JetStream work alone
	txs, reads          int64         // store requests made by the projector
}

// projectRound is one round of benchProject, on a fresh journal and store.
func projectRound(b *testing.B, be projectiontest.Backend, n int, pk func(int) string) projectResult {
	ctx := journaltest.Context(b, 10*time.Minute)
	st := &countingStore{Store: be.Open(b)}
	h := projectiontest.Start(b, st, projectiontest.Options{})
	table := projectiontest.BenchTable(b, st.Store, "Proj")
	cmds := make([]*events.Command, n)
	for i := range cmds {
		cmds[i] = projectiontest.BenchUpsert(fmt.Sprintf("c-%09d", i), table, pk(i), i)
	}
	h.PublishAll(ctx, cmds)

	b.StartTimer()
	stop := startProfile(b)
	start, cpu := time.Now(), proccpu.Used()
	h.StartProjector(projection.Config{})
	h.WaitProjected(ctx)
	elapsed, cpu := time.Since(start), proccpu.Used()-cpu
	stop()
	b.StopTimer()
	if err := h.StopProjector(); err != nil {
		b.Fatal(err)
	}
	// Every command applied: one new row (tip) each.
	count := 0
	from, to := rows.TipRange()
	q := store.Query{AllPartitions: true, From: from, To: to}
	if err := store.All(ctx, st.Store, table, q, func(store.Entity) error { count++; return nil }); err != nil {
		b.Fatal(err)
	}
	if count != n {
		b.Fatalf("%d rows projected from %d commands", count, n)
	}
	baseCPU := proccpu.Used()
	base := batched(b, st.Store, n, pk)
	baseCPU = proccpu.Used() - baseCPU
	floorCPU := journalFloor(b, h, n)
	return projectResult{projection: elapsed, batched: base, cpu: cpu, batchedCPU: baseCPU, floorCPU: floorCPU,
		txs: st.txs.Load(), reads: st.reads.Load()}
}

// batched writes the rows of n commands (command i: the tip of row i in
// partition pk(i)) into a scratch table in the fewest transactions that can
// hold them (batchRows: each partition's rows, store.MaxOps at most), one
// after the other, and returns the time it took.
func batched(b *testing.B, st store.Store, n int, pk func(int) string) time.Duration {
	ctx := context.Background()
	table := projectiontest.BenchTable(b, st, "Tx")
	batches := batchRows(n, pk)
	start := time.Now()
	for _, t := range batches {
		if _, err := st.Transact(ctx, table, t.pk, t.ops); err != nil {
			b.Fatalf("Transact: %v", err)
		}
	}
	return time.Since(start)
}

// countingStore counts the requests the projector makes.
type countingStore struct {
	store.Store
	txs, reads atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	c.reads.Add(1)
	return c.Store.Get(ctx, table, pk, rk)
}

func (c *countingStore) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	c.reads.Add(1)
	return c.Store.Query(ctx, table, q)
}

// Transact counts a transaction and passes on the etags the store reports.
func (c *countingStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	c.txs.Add(1)
	return c.Store.Transact(ctx, table, pk, ops)
}

// outcomeRate is the offered load of BenchmarkPublishToOutcome.
const outcomeRate = 500

// BenchmarkPublishToOutcome measures, on SQLite, the latency from
// Writer.Publish to the command's outcome arriving at a subscriber, at a
// fixed offered rate of 500 commands/s (b.N commands, one per tick of a
// ticker, each published and awaited in its own goroutine so that a slow
// one does not hold back the schedule). Commands are single-row upserts of
// new rows over 100 partitions. It reports p50-ms, p99-ms and max-ms, and
// the same of the journal's acknowledgement alone (ack-p50-ms, ...) as the
// same-run baseline.
func BenchmarkPublishToOutcome(b *testing.B) {
	ctx := journaltest.Context(b, 10*time.Minute)
	h := projectiontest.Start(b, projectiontest.SQLite(b), projectiontest.Options{})
	h.StartProjector(projection.Config{})
	subs := subscribeOutcomes(b, ctx, h.JS)

	// publish returns the time until the journal acknowledged the command
	// and until its outcome arrived.
	publish := func(i int) (ack, outcome time.Duration, err error) {
		c := projectiontest.BenchUpsert(fmt.Sprintf("l-%09d", i), "latency", fmt.Sprintf("p%03d", i%100), i)
		ch := subs.expect(c.ID)
		start := time.Now()
		if _, err := h.Writer.Publish(ctx, c); err != nil {
			return 0, 0, err
		}
		ack = time.Since(start)
		select {
		case o := <-ch:
			if o.Status != wire.StatusApplied {
				return 0, 0, fmt.Errorf("%s: %s %s", c.ID, o.Status, o.Reason)
			}
			return ack, time.Since(start), nil
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("outcome of %s: %w", c.ID, ctx.Err())
		}
	}
	// Warm up: the table, the consumers and the connections.
	for i := range 20 {
		if _, _, err := publish(-1 - i); err != nil {
			b.Fatal(err)
		}
	}

	acks := make([]time.Duration, b.N)
	lat := make([]time.Duration, b.N)
	tick := time.NewTicker(time.Second / outcomeRate)
	defer tick.Stop()
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		wg.Go(func() {
			var err error
			acks[i], lat[i], err = publish(i)
			if err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	reportLatency(b, "", lat)
	reportLatency(b, "ack-", acks)
}

// reportLatency reports the median, 99th percentile and maximum of lat in
// milliseconds, as <prefix>p50-ms, <prefix>p99-ms and <prefix>max-ms.
func reportLatency(b *testing.B, prefix string, lat []time.Duration) {
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), prefix+"p50-ms")
	b.ReportMetric(ms(lat[(len(lat)-1)*99/100]), prefix+"p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), prefix+"max-ms")
}

// outcomeWaiters hands outcomes from one ordered consumer on outcomes.> to
// the publishers waiting for them.
type outcomeWaiters struct {
	mu      sync.Mutex
	waiting map[string]chan wire.Outcome
}

// subscribeOutcomes follows every outcome published from now on.
func subscribeOutcomes(b *testing.B, ctx context.Context, js jetstream.JetStream) *outcomeWaiters {
	b.Helper()
	w := &outcomeWaiters{waiting: make(map[string]chan wire.Outcome)}
	oc := outcomes.NewReader(js)
	last, err := oc.Last(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = oc.Follow(ctx, last+1, func(_ uint64, o wire.Outcome) bool {
			w.mu.Lock()
			ch := w.waiting[o.ID]
			delete(w.waiting, o.ID)
			w.mu.Unlock()
			if ch != nil {
				ch <- o
			}
			return false
		})
	}()
	b.Cleanup(func() { cancel(); <-done })
	return w
}

// expect registers a wait for the outcome of command id; call it before
// publishing the command.
func (w *outcomeWaiters) expect(id string) <-chan wire.Outcome {
	ch := make(chan wire.Outcome, 1)
	w.mu.Lock()
	w.waiting[id] = ch
	w.mu.Unlock()
	return ch
}

// BenchmarkProjectorMemory and its child process.
const (
	// benchCommandsEnv sets the number of commands of
	// BenchmarkProjectorMemory, which is skipped when it is unset.
	benchCommandsEnv = "TABLEJOURNAL_BENCH_COMMANDS"
	memChildEnv      = "TABLEJOURNAL_BENCH_MEMORY_CHILD" // the child's NATS URL
	memDBEnv         = "TABLEJOURNAL_BENCH_MEMORY_DB"    // the child's SQLite file
	memStatsPrefix   = "memstats "
)

// memStats is what the projector process reports of its memory.
type memStats struct {
	HeapInuse uint64 `json:"heapInuse"` // runtime.MemStats after a GC
	RSS       uint64 `json:"rss"`       // VmRSS of /proc/self/status
}

// BenchmarkProjectorMemory measures the memory of a projector process on
// SQLite after it projected 100k and TABLEJOURNAL_BENCH_COMMANDS commands
// (make bench: 1M), each upserting its own new row over 1,000 partitions,
// so that the row cache (ApplierConfig.CacheRows, 100,000 by default) is
// full at the first point and at its bound after. The projector runs in a
// child process (this test binary, running TestProjectorMemoryChild) so
// that the JetStream server, the writer and this benchmark are not counted.
// Commands are published while the projector runs; at each point the
// benchmark waits until every command has an outcome, then the child
// collects garbage and reports. Metrics: heap-MB-<n> (HeapInuse) and
// rss-MB-<n> (VmRSS) at each point, heap-growth (last point over first) and
// cmds/s over the whole run.
func BenchmarkProjectorMemory(b *testing.B) {
	total, err := strconv.Atoi(os.Getenv(benchCommandsEnv))
	if err != nil || total < 10 {
		b.Skipf("set %s to the number of commands (e.g. 1000000) to run it", benchCommandsEnv)
	}
	points := []int{min(100_000, total/10), total}
	for range b.N {
		start := time.Now()
		stats := memoryRun(b, points)
		b.ReportMetric(float64(total)/time.Since(start).Seconds(), "cmds/s")
		for i, s := range stats {
			b.ReportMetric(float64(s.HeapInuse)/(1<<20), "heap-MB-"+countLabel(points[i]))
			b.ReportMetric(float64(s.RSS)/(1<<20), "rss-MB-"+countLabel(points[i]))
		}
		b.ReportMetric(float64(stats[len(stats)-1].HeapInuse)/float64(stats[0].HeapInuse), "heap-growth")
	}
}

// memoryRun publishes commands up to each point, waits until they are
// projected by a child projector and returns its memory at each point.
func memoryRun(b *testing.B, points []int) []memStats {
	ctx := journaltest.Context(b, 30*time.Minute)
	dbPath := filepath.Join(b.TempDir(), "tables.db")
	st, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	h := projectiontest.Start(b, st, projectiontest.Options{})
	child := startMemoryChild(b, h.Server.ClientURL(), dbPath)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // a failed projector fails the wait at once
		select {
		case <-child.exited:
			cancel()
		case <-ctx.Done():
		}
	}()

	var stats []memStats
	next := 0
	for _, p := range points {
		for lo := next; lo < p; lo += 10_000 {
			for i := lo; i < min(p, lo+10_000); i++ {
				c := projectiontest.BenchUpsert(fmt.Sprintf("m-%09d", i), "memory", fmt.Sprintf("p%04d", i%spreadPartitions), i)
				if _, err := h.Writer.PublishAsync(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			if err := h.Writer.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		next = p
		h.WaitProjected(ctx)
		stats = append(stats, child.measure(b))
	}
	if _, err := st.Get(ctx, "memory", fmt.Sprintf("p%04d", (next-1)%spreadPartitions), rows.TipKey(projectiontest.BenchRK(next-1))); err != nil {
		b.Fatalf("last row: %v", err)
	}
	child.stop(b)
	return stats
}

// memoryChild is the projector process of BenchmarkProjectorMemory, driven
// through its stdin ("measure") and answering on its stdout.
type memoryChild struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	reports chan string   // the JSON of each memstats line
	exited  chan struct{} // closed once the process has exited
	err     error         // the process's exit status, set before exited closes
}

func startMemoryChild(b *testing.B, natsURL, dbPath string) *memoryChild {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProjectorMemoryChild$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), memChildEnv+"="+natsURL, memDBEnv+"="+dbPath)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &memoryChild{cmd: cmd, in: in, reports: make(chan string, 1), exited: make(chan struct{})}
	go func() {
		// Every read of stdout happens before Wait, which closes it.
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), memStatsPrefix); ok {
				c.reports <- rest
			}
		}
		close(c.reports)
		c.err = cmd.Wait()
		close(c.exited)
	}()
	b.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// measure asks the child for its memory and reads the answer.
func (c *memoryChild) measure(b *testing.B) memStats {
	b.Helper()
	if _, err := fmt.Fprintln(c.in, "measure"); err != nil {
		b.Fatalf("projector process: %v", err)
	}
	rest, ok := <-c.reports
	if !ok {
		<-c.exited
		b.Fatalf("projector process ended without reporting its memory: %v", c.err)
	}
	var s memStats
	if err := json.Unmarshal([]byte(rest), &s); err != nil {
		b.Fatal(err)
	}
	return s
}

// stop closes the child's stdin, which stops its projector, and waits for
// it to exit.
func (c *memoryChild) stop(b *testing.B) {
	b.Helper()
	c.in.Close()
	<-c.exited
	if c.err != nil {
		b.Fatalf("projector process: %v", c.err)
	}
}

// TestProjectorMemoryChild is not a test: it is the projector process of
// BenchmarkProjectorMemory, and skips unless that benchmark started it. It
// projects the parent's journal into the parent's SQLite file with the
// default configuration and, for every "measure" line on stdin, collects
// garbage and prints its memory. It stops at the end of stdin.
func TestProjectorMemoryChild(t *testing.T) {
	url := os.Getenv(memChildEnv)
	if url == "" {
		t.Skip("the projector process of BenchmarkProjectorMemory")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := sqlite.Open(ctx, os.Getenv(memDBEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nc, js, err := connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	p, err := projection.New(ctx, js, st, projection.Config{Logger: projectiontest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := p.Run(ctx)
		if err != nil {
			// The parent is waiting for outcomes that will not come.
			fmt.Fprintln(os.Stderr, "projector:", err)
			os.Exit(1)
		}
		done <- err
	}()
	in := bufio.NewScanner(os.Stdin)
	for point := 0; in.Scan(); {
		if in.Text() != "measure" {
			continue
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if dir := os.Getenv(profileEnv); dir != "" {
			// What is live at each point, to compare two with pprof -base.
			writeHeapProfile(t, filepath.Join(dir, fmt.Sprintf("ProjectorMemory.heap-%d.pprof", point)))
		}
		point++
		data, err := json.Marshal(memStats{HeapInuse: ms.HeapInuse, RSS: vmRSS(t)})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s%s\n", memStatsPrefix, data)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// writeHeapProfile writes the heap profile (live objects as of the last
// garbage collection) to path.
func writeHeapProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

// vmRSS reads the resident set size of this process from /proc/self/status.
func vmRSS(t *testing.T) uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// countLabel writes a count as the metrics name it: 100k, 1M, 2500.
func countLabel(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// BenchmarkOutcomeLookup measures what it costs to apply a command ID at
// most once: per fetch, one batched direct get of the fetched IDs' latest
// outcomes. Per backend, rounds of the hot-partition workload of
// benchProject (every ID new, so the look-up finds nothing, the common
// case) projected with and without the look-up, each on a fresh journal
// and store. It reports both rates and ratio-vs-no-lookup.
func BenchmarkOutcomeLookup(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.Name, func(b *testing.B) {
			n := projectCommands[be.Name]
			var with, without time.Duration
			b.StopTimer()
			for range b.N {
				with += lookupRound(b, be, n, false)
				without += lookupRound(b, be, n, true)
			}
			cmds := float64(n * b.N)
			b.ReportMetric(cmds/with.Seconds(), "cmds/s")
			b.ReportMetric(cmds/without.Seconds(), "no-lookup-cmds/s")
			b.ReportMetric(without.Seconds()/with.Seconds(), "ratio-vs-no-lookup")
		})
	}
}

// lookupRound publishes n single-row upserts to one partition, then times
// their projection, with or without the outcomes look-up.
func lookupRound(b *testing.B, be projectiontest.Backend, n int, noLookup bool) time.Duration {
	ctx := journaltest.Context(b, 10*time.Minute)
	st := be.Open(b)
	h := projectiontest.Start(b, st, projectiontest.Options{})
	table := projectiontest.BenchTable(b, st, "Look")
	cmds := make([]*events.Command, n)
	for i := range cmds {
		cmds[i] = projectiontest.BenchUpsert(fmt.Sprintf("c-%09d", i), table, "hot", i)
	}
	h.PublishAll(ctx, cmds)
	p, err := projection.New(ctx, h.JS, st, projection.Config{Logger: projectiontest.QuietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	if noLookup {
		projection.DisableOutcomeLookup(p)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.Run(rctx) }()
	h.WaitProjected(ctx)
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	return elapsed
}

func connect(url string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
