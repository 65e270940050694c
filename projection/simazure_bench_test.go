package projection_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/proccpu"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/simazure"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// Environment of BenchmarkSimAzure.
const (
	// simSecondsEnv sizes each workload as this many seconds of its limit;
	// if unset, 3.
	simSecondsEnv = "TABLEJOURNAL_BENCH_SIM_SECONDS"
	// simRetryEnv is the client retry policy of the simulated store: "sdk"
	// (store/azure's Azure SDK policy, the default), "none" (ErrBusy
	// reaches the caller at once) or a duration: the SDK policy with that
	// MaxDelay (azure.Config.MaxRetryDelay).
	simRetryEnv = "TABLEJOURNAL_BENCH_SIM_RETRY"
	// simBurstEnv overrides simazure.Config.Burst (a duration).
	simBurstEnv = "TABLEJOURNAL_BENCH_SIM_BURST"
	// simOwnershipEnv is how the instances share the shards: "leases"
	// (cooperative ownership, the default) or "static" (Config.Shards).
	simOwnershipEnv = "TABLEJOURNAL_BENCH_SIM_OWNERSHIP"
	// simScaleEnv multiplies both limits (e.g. 4 on a machine with four
	// times the cores, 0.2 to take the projector's CPU out of the picture).
	simScaleEnv = "TABLEJOURNAL_BENCH_SIM_SCALE"
)

// simInstances are the projector instance counts BenchmarkSimAzure runs.
var simInstances = []int{1, 2, 4}

// A simWorkload is one workload of BenchmarkSimAzure: command i upserts
// its own new row in partition pk(i), and the limit that binds it is
// limit's.
type simWorkload struct {
	name  string
	pk    func(i int) string
	limit func(simazure.Config) float64
}

var simWorkloads = []simWorkload{
	{"spread", func(i int) string { return fmt.Sprintf("p%04d", i%spreadPartitions) },
		func(c simazure.Config) float64 { return c.AccountRate }},
	{"hot", func(int) string { return "hot" },
		func(c simazure.Config) float64 { return c.PartitionRate }},
}

// BenchmarkSimAzure measures the projector against a simulated Azure
// account (store/simazure over the embedded store: 5 ms per request, 500
// entities/s per partition, 5,000 per account, ErrBusy beyond, behind the
// Azure SDK's retries as store/azure configures them), for a spread
// workload (1,000 partitions, bound by the account limit) and a hot one (1
// partition, bound by the partition limit), each of single-row upserts of
// new rows, as many as the limit admits in TABLEJOURNAL_BENCH_SIM_SECONDS
// (3).
//
// Per workload, "raw" writes the same rows straight into a fresh simulated
// account in the fewest transactions that hold them (batchRows: each
// partition's rows, 100 at most per transaction), each partition's in
// order and 64 partitions at once, retrying ErrBusy with backoff: what the
// limits let a plain writer do. Then "instances=N" projects the published
// workload with N projector instances sharing one fresh simulated account,
// each on its own connection, started together with the same
// configuration: they share the journal's shards through leases
// (TABLEJOURNAL_BENCH_SIM_OWNERSHIP=static splits them by Config.Shards
// instead).
//
// The instances report cmds/s and ratio-vs-limit (commands, each one new
// row, per second over the binding limit; target >= 0.8), raw reports
// limit-used, the same fraction of its rows. All report entities/s (every
// entity written: the projector's partition fences too), busy/req (the
// share of requests answered 503, client retries included), charged/row
// (entities charged to the account per row: reads and fences cost too),
// cpu-µs/row and cpu-cores (this process's CPU, per row and per second:
// projector, JetStream server and the embedded store; with few 503s and
// cpu-cores well below the machine's, the process was starved of CPU); the
// instances also cmds/tx and reads/cmd. benchreport
// sets every instance count beside raw (ratio-vs-raw) and beside one
// instance (ratio-vs-1-instance). ns/op is the timed writing or projection.
//
// TABLEJOURNAL_BENCH_SIM_RETRY, _BURST and _SCALE change the simulated
// account (see their constants) to study the projector's behaviour.
func BenchmarkSimAzure(b *testing.B) {
	cfg := simConfig(b)
	static := false
	switch v := os.Getenv(simOwnershipEnv); v {
	case "", "leases":
	case "static":
		static = true
	default:
		b.Fatalf("%s=%q: want leases or static", simOwnershipEnv, v)
	}
	secs := 3.0
	if v := os.Getenv(simSecondsEnv); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("%s=%q: want a positive number of seconds", simSecondsEnv, v)
		}
		secs = f
	}
	for _, w := range simWorkloads {
		b.Run(w.name, func(b *testing.B) {
			limit := w.limit(cfg)
			n := int(limit * secs)
			b.Run("raw", func(b *testing.B) {
				var sum simResult
				b.StopTimer()
				for range b.N {
					sum.add(simRaw(b, cfg, n, w.pk))
				}
				sum.report(b, limit, "limit-used", float64(n*b.N))
			})
			for _, inst := range simInstances {
				b.Run(fmt.Sprintf("instances=%d", inst), func(b *testing.B) {
					var sum simResult
					b.StopTimer()
					for range b.N {
						sum.add(simProject(b, cfg, inst, static, n, w.pk))
					}
					cmds := float64(n * b.N)
					b.ReportMetric(cmds/sum.elapsed.Seconds(), "cmds/s")
					b.ReportMetric(cmds/float64(sum.stats.Transactions), "cmds/tx")
					b.ReportMetric(float64(sum.stats.Reads)/cmds, "reads/cmd")
					sum.report(b, limit, "ratio-vs-limit", cmds)
				})
			}
		})
	}
}

// simConfig is the simulated account of BenchmarkSimAzure: the defaults
// with the Azure SDK's retries, unless the environment says otherwise.
func simConfig(b *testing.B) simazure.Config {
	cfg := simazure.Config{Retry: simazure.AzureSDKRetry}
	switch v := os.Getenv(simRetryEnv); v {
	case "", "sdk":
	case "none":
		cfg.Retry = simazure.Retry{}
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want sdk, none or a positive duration", simRetryEnv, v)
		}
		cfg.Retry.MaxDelay = d
	}
	if v := os.Getenv(simBurstEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive duration", simBurstEnv, v)
		}
		cfg.Burst = d
	}
	s, err := simazure.New(nil, cfg)
	if err != nil {
		b.Fatal(err)
	}
	cfg = s.Config() // defaults filled in
	if v := os.Getenv(simScaleEnv); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("%s=%q: want a positive factor", simScaleEnv, v)
		}
		cfg.PartitionRate *= f
		cfg.AccountRate *= f
	}
	return cfg
}

// simResult is what one timed phase of BenchmarkSimAzure measured.
type simResult struct {
	elapsed, cpu time.Duration // wall clock; this process's CPU
	stats        simazure.Stats
}

func (r *simResult) add(o simResult) {
	r.elapsed += o.elapsed
	r.cpu += o.cpu
	a, b := r.stats, o.stats
	r.stats = simazure.Stats{
		Requests: a.Requests + b.Requests, Busy: a.Busy + b.Busy,
		Transactions: a.Transactions + b.Transactions, Reads: a.Reads + b.Reads,
		Written: a.Written + b.Written, Entities: a.Entities + b.Entities,
	}
}

// report reports the metrics common to raw and the instances, for rows
// table rows written (one per command): their rate over the limit as
// fraction, and what each cost.
func (r *simResult) report(b *testing.B, limit float64, fraction string, rows float64) {
	st := r.stats
	b.ReportMetric(float64(st.Written)/r.elapsed.Seconds(), "entities/s")
	b.ReportMetric(rows/r.elapsed.Seconds()/limit, fraction)
	b.ReportMetric(float64(st.Busy)/float64(st.Requests), "busy/req")
	b.ReportMetric(float64(st.Entities)/rows, "charged/row")
	if r.cpu > 0 {
		b.ReportMetric(float64(r.cpu.Microseconds())/rows, "cpu-µs/row")
		b.ReportMetric(r.cpu.Seconds()/r.elapsed.Seconds(), "cpu-cores")
	}
}

// simProject publishes n commands, then projects them with instances
// projector instances on one fresh simulated account, timed, and returns
// what it measured. The instances share the shards through leases, or,
// if static, split them by Config.Shards.
func simProject(b *testing.B, cfg simazure.Config, instances int, static bool, n int, pk func(int) string) simResult {
	ctx := journaltest.Context(b, 10*time.Minute)
	inner := simInner(b)
	h := projectiontest.Start(b, inner, projectiontest.Options{})
	table := projectiontest.BenchTable(b, inner, "Sim")
	cmds := make([]*events.Command, n)
	for i := range cmds {
		cmds[i] = projectiontest.BenchUpsert(fmt.Sprintf("c-%09d", i), table, pk(i), i)
	}
	h.PublishAll(ctx, cmds)
	sim, err := simazure.New(inner, cfg)
	if err != nil {
		b.Fatal(err)
	}

	// A failed instance ends the wait at once.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	b.StartTimer()
	stop := startProfile(b)
	start, cpu := time.Now(), proccpu.Used()
	for i := range instances {
		_, js := journaltest.Connect(b, h.Server.ClientURL())
		pc := projection.Config{InstanceID: fmt.Sprintf("bench-%d", i), Logger: projectiontest.QuietLogger()}
		if static {
			pc.Shards = staticShards(h.Journal.Shards(), instances, i)
		}
		p, err := projection.New(ctx, js, sim, pc)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			if err := p.Run(runCtx); err != nil {
				b.Errorf("projector instance %d: %v", i, err)
				cancel()
			}
		})
	}
	h.WaitProjected(runCtx)
	r := simResult{elapsed: time.Since(start), cpu: proccpu.Used() - cpu, stats: sim.Stats()}
	stop()
	b.StopTimer()
	cancel()
	wg.Wait()
	count := 0
	from, to := rows.TipRange()
	q := store.Query{AllPartitions: true, From: from, To: to}
	if err := store.All(ctx, inner, table, q, func(store.Entity) error { count++; return nil }); err != nil {
		b.Fatal(err)
	}
	if count != n {
		b.Fatalf("%d rows projected from %d commands", count, n)
	}
	return r
}

// simInner opens the embedded store under the simulated account. Its file
// is in memory (/dev/shm) where there is one: on disk, every transaction's
// fsync serializes the store at a few hundred transactions per second,
// below the simulated limits, while the simulated latency already stands
// for the whole round trip to Azure.
func simInner(b *testing.B) store.Store {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "tablejournal-simazure-")
	if err != nil {
		dir = b.TempDir()
	} else {
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "tables.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// staticShards is instance i's share of the journal's shards when
// instances split them: every instances-th shard.
func staticShards(shards, instances, i int) []int {
	var own []int
	for s := i; s < shards; s += instances {
		own = append(own, s)
	}
	return own
}

// simRawWorkers is how many partitions the raw writer writes at once.
const simRawWorkers = 64

// simRaw writes the rows of n commands straight into a fresh simulated
// account in batches per partition (batchRows), each partition's batches in
// order and simRawWorkers partitions at once, retrying ErrBusy with
// backoff, and returns what it measured.
func simRaw(b *testing.B, cfg simazure.Config, n int, pk func(int) string) simResult {
	ctx := journaltest.Context(b, 10*time.Minute)
	inner := simInner(b)
	table := projectiontest.BenchTable(b, inner, "Raw")
	batches := batchRows(n, pk)
	sim, err := simazure.New(inner, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var parts [][]rowBatch // batches grouped by partition, in order
	for i, t := range batches {
		if i == 0 || t.pk != batches[i-1].pk {
			parts = append(parts, nil)
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], t)
	}
	todo := make(chan []rowBatch)
	var wg sync.WaitGroup
	b.StartTimer()
	start, cpu := time.Now(), proccpu.Used()
	for range simRawWorkers {
		wg.Go(func() {
			for part := range todo {
				for _, t := range part {
					bo := backoff.NewExponentialBackOff()
					bo.InitialInterval = 50 * time.Millisecond
					err := backoff.Retry(func() error {
						_, err := sim.Transact(ctx, table, t.pk, t.ops)
						if err != nil && !errors.Is(err, store.ErrBusy) {
							return backoff.Permanent(err)
						}
						return err
					}, backoff.WithContext(bo, ctx))
					if err != nil {
						b.Errorf("Transact: %v", err)
					}
				}
			}
		})
	}
	for _, part := range parts {
		todo <- part
	}
	close(todo)
	wg.Wait()
	r := simResult{elapsed: time.Since(start), cpu: proccpu.Used() - cpu, stats: sim.Stats()}
	b.StopTimer()
	return r
}

// A rowBatch is one transaction of batchRows.
type rowBatch struct {
	pk  string
	ops []store.Op
}

// batchRows groups the rows the projector writes for n commands (command
// i: the tip of row i in partition pk(i)) into the fewest transactions that
// can hold them: each partition's rows in order, store.MaxOps at most per
// transaction, partitions in order of first appearance.
func batchRows(n int, pk func(int) string) []rowBatch {
	byPK := make(map[string][]int)
	var order []string
	for i := range n {
		p := pk(i)
		if _, ok := byPK[p]; !ok {
			order = append(order, p)
		}
		byPK[p] = append(byPK[p], i)
	}
	var out []rowBatch
	for _, p := range order {
		idx := byPK[p]
		for lo := 0; lo < len(idx); lo += store.MaxOps {
			ops := make([]store.Op, 0, store.MaxOps)
			for _, i := range idx[lo:min(len(idx), lo+store.MaxOps)] {
				ops = append(ops, store.Op{Kind: store.Upsert, RK: rows.TipKey(projectiontest.BenchRK(i)), Props: storetest.BenchEntity(i)})
			}
			out = append(out, rowBatch{pk: p, ops: ops})
		}
	}
	return out
}
