//go:build unix

package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/proccpu"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// BenchmarkProjectMetrics measures what operating a projector costs it:
// per workload (hot: one partition; spread: 1,000 partitions) and backend,
// metricsPairs×b.N pairs of rounds of the projection BenchmarkProjectHot
// and BenchmarkProjectSpread time (each round a metricsPairs-th of their
// commands), one without metrics and one wired as `projector
// --metrics-addr` wires it (metrics.Start: the Prometheus observer, the
// measured store, /metrics served and scraped every second, the summary
// log and the status reports), the order alternating from pair to pair:
// short alternating rounds let a shared machine's load fall on both sides.
// It reports both rates and their ratio, ratio-vs-no-metrics (target
// >= 0.97), and the CPU time of the test process per command (the
// in-process JetStream server and SQLite included, Azurite not) and its
// ratio, which a shared machine disturbs less than the wall clock.
func BenchmarkProjectMetrics(b *testing.B) {
	workloads := []struct {
		name string
		pk   func(int) string
	}{
		{"hot", func(int) string { return "hot" }},
		{"spread", func(i int) string { return fmt.Sprintf("p%04d", i%spreadPartitions) }},
	}
	for _, wl := range workloads {
		for _, be := range backends() {
			b.Run(wl.name+"/"+be.Name, func(b *testing.B) {
				n := projectCommands[be.Name] / metricsPairs
				var with, without roundCost
				b.StopTimer()
				for range b.N * metricsPairs {
					// Alternate which goes first, across runs too.
					metricsRounds[b.Name()]++
					if metricsRounds[b.Name()]%2 == 1 {
						without.add(metricsRound(b, be, n, wl.pk, false))
						with.add(metricsRound(b, be, n, wl.pk, true))
					} else {
						with.add(metricsRound(b, be, n, wl.pk, true))
						without.add(metricsRound(b, be, n, wl.pk, false))
					}
				}
				cmds := float64(n * b.N * metricsPairs)
				b.ReportMetric(cmds/without.wall.Seconds(), "cmds/s")
				b.ReportMetric(cmds/with.wall.Seconds(), "metrics-cmds/s")
				b.ReportMetric(without.wall.Seconds()/with.wall.Seconds(), "ratio-vs-no-metrics")
				b.ReportMetric(float64(without.cpu.Nanoseconds())/cmds, "cpu-ns/cmd")
				b.ReportMetric(float64(with.cpu.Nanoseconds())/cmds, "metrics-cpu-ns/cmd")
				b.ReportMetric(without.cpu.Seconds()/with.cpu.Seconds(), "ratio-vs-no-metrics-cpu")
			})
		}
	}
}

// metricsPairs is the number of pairs of rounds per b.N.
const metricsPairs = 4

// metricsRounds counts the pairs of rounds per benchmark (benchmarks run
// one at a time), across runs.
var metricsRounds = map[string]int{}

// roundCost is the wall-clock and CPU time of projection rounds.
type roundCost struct{ wall, cpu time.Duration }

func (c *roundCost) add(r roundCost) { c.wall += r.wall; c.cpu += r.cpu }

// metricsRound publishes n single-row upserts (command i in partition
// pk(i)) to a fresh journal and store, untimed, then times a projector
// until every command has an outcome, with metrics or without.
func metricsRound(b *testing.B, be projectiontest.Backend, n int, pk func(int) string, withMetrics bool) roundCost {
	ctx := journaltest.Context(b, 10*time.Minute)
	st := be.Open(b)
	h := projectiontest.Start(b, st, projectiontest.Options{})
	table := projectiontest.BenchTable(b, st, "Metrics")
	cmds := make([]*events.Command, n)
	for i := range cmds {
		cmds[i] = projectiontest.BenchUpsert(fmt.Sprintf("m-%09d", i), table, pk(i), i)
	}
	h.PublishAll(ctx, cmds)

	cfg := projection.Config{}
	if withMetrics {
		ops, measured, err := Start(ctx, OpsConfig{Addr: "127.0.0.1:0", Instance: "bench",
			NATS: h.NC, JS: h.JS, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		sctx, stopScrapes := context.WithCancel(ctx)
		scraped := make(chan int, 1)
		go func() { scraped <- scrapeEverySecond(sctx, ops.URL()) }()
		b.Cleanup(func() {
			stopScrapes()
			if <-scraped == 0 {
				b.Error("/metrics was never scraped")
			}
			ops.Close()
		})
		h.Store, cfg.Observer, cfg.Applier.Stats = measured, ops, &projection.Stats{}
		ops.SetStats(cfg.Applier.Stats)
		ops.Running()
	}
	b.StartTimer()
	start, cpu := time.Now(), proccpu.Used()
	h.StartProjector(cfg)
	h.WaitProjected(ctx)
	cost := roundCost{wall: time.Since(start), cpu: proccpu.Used() - cpu}
	b.StopTimer()
	if err := h.StopProjector(); err != nil {
		b.Fatal(err)
	}
	count := 0 // tips: one per command
	from, to := rows.TipRange()
	q := store.Query{AllPartitions: true, From: from, To: to}
	if err := store.All(ctx, st, table, q, func(store.Entity) error { count++; return nil }); err != nil {
		b.Fatal(err)
	}
	if count != n {
		b.Fatalf("%d rows projected from %d commands", count, n)
	}
	return cost
}

// scrapeEverySecond GETs url at once and then every second until ctx ends,
// reading each body whole, and returns how many scrapes succeeded.
func scrapeEverySecond(ctx context.Context, url string) int {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	n := 0
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return n
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			if _, err := io.Copy(io.Discard, resp.Body); err == nil && resp.StatusCode == http.StatusOK {
				n++
			}
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
			return n
		case <-t.C:
		}
	}
}

// The projection benchmarks' sizes (projection/bench_test.go), so that a
// round here is a round there.
var projectCommands = map[string]int{"sqlite": 20_000, "azurite": 3_000}

const spreadPartitions = 1000

func backends() []projectiontest.Backend {
	return projectiontest.Backends(azuriteSrv.ConnectionString())
}
