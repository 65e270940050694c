package projection_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// layoutCommands is the throughput workload of one layout in a round of
// BenchmarkLayouts per backend; layoutLatencyCommands the commands whose
// Apply latency it measures.
var (
	layoutCommands        = map[string]int{"sqlite": 10_000, "azurite": 2_000}
	layoutLatencyCommands = map[string]int{"sqlite": 300, "azurite": 150}
)

// layoutTables numbers the tables of BenchmarkLayouts.
var layoutTables atomic.Int64

// BenchmarkLayouts measures the plain layout (SPEC §4) against the
// versioned one in the same run, per backend: each round, for each layout
// (the order alternating between rounds), on a table of its own,
//   - throughput: publish N single-row upserts spread over 1,000
//     partitions (untimed), start a projector and time until every command
//     has an outcome;
//   - Apply latency: with that projector running, commands one after the
//     other (upserts of the first rows again), each timed from
//     Publish to its outcome (the reply-before-durable path aside: the
//     outcome is published after the table's write).
//
// It reports, per layout, cmds/s and p50/p99 latency in ms, and
// ratio-vs-versioned (plain's cmds/s over versioned's), lat-x-versioned-p50
// and -p99 (plain's latency over versioned's): the price of the second
// write per batch.
func BenchmarkLayouts(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.Name, func(b *testing.B) {
			layouts := []wire.Layout{wire.LayoutVersioned, wire.LayoutPlain}
			proj := map[wire.Layout]time.Duration{}
			lat := map[wire.Layout][]time.Duration{}
			b.StopTimer()
			for i := range b.N {
				for j := range layouts {
					l := layouts[(i+j)%2]
					d, ls := layoutRound(b, be, l)
					proj[l] += d
					lat[l] = append(lat[l], ls...)
				}
			}
			n := float64(layoutCommands[be.Name] * b.N)
			rate := func(l wire.Layout) float64 { return n / proj[l].Seconds() }
			p := map[wire.Layout][2]float64{}
			for _, l := range layouts {
				p[l] = percentiles(lat[l])
				b.ReportMetric(rate(l), string(l)+"-cmds/s")
				b.ReportMetric(p[l][0], string(l)+"-p50-ms")
				b.ReportMetric(p[l][1], string(l)+"-p99-ms")
			}
			b.ReportMetric(rate(wire.LayoutPlain)/rate(wire.LayoutVersioned), "ratio-vs-versioned")
			b.ReportMetric(p[wire.LayoutPlain][0]/p[wire.LayoutVersioned][0], "lat-x-versioned-p50")
			b.ReportMetric(p[wire.LayoutPlain][1]/p[wire.LayoutVersioned][1], "lat-x-versioned-p99")
		})
	}
}

// layoutRound is one layout's part of a round of BenchmarkLayouts, on a
// fresh journal and store: the projection time of the throughput workload
// and the latencies of the latency one.
func layoutRound(b *testing.B, be projectiontest.Backend, l wire.Layout) (time.Duration, []time.Duration) {
	ctx := journaltest.Context(b, 10*time.Minute)
	st := be.Open(b)
	h := projectiontest.Start(b, st, projectiontest.Options{})
	// Lower case: Azurite matches table names case-sensitively in
	// transactions (Azure/Azurite#1355), and a plain table's current rows
	// are written by its token.
	table := fmt.Sprintf("benchlayout%s%d", l, layoutTables.Add(1))
	if err := st.CreateTable(ctx, table); err != nil {
		b.Fatal(err)
	}
	h.SetLayout(ctx, table, l)
	n := layoutCommands[be.Name]
	cmds := make([]*events.Command, n)
	for i := range cmds {
		cmds[i] = projectiontest.BenchUpsert(fmt.Sprintf("c-%09d", i), table, fmt.Sprintf("p%04d", i%spreadPartitions), i)
	}
	h.PublishAll(ctx, cmds)
	b.StartTimer()
	start := time.Now()
	h.StartProjector(projection.Config{})
	h.WaitProjected(ctx)
	elapsed := time.Since(start)
	b.StopTimer()

	outcomes := subscribeOutcomes(b, ctx, h.JS)
	m := layoutLatencyCommands[be.Name]
	lat := make([]time.Duration, 0, m)
	for i := range m {
		c := projectiontest.BenchUpsert(fmt.Sprintf("l-%09d", i), table, fmt.Sprintf("p%04d", i%spreadPartitions), i)
		ch := outcomes.expect(c.ID)
		t0 := time.Now()
		if _, err := h.Writer.Publish(ctx, c); err != nil {
			b.Fatal(err)
		}
		select {
		case o := <-ch:
			if o.Status != wire.StatusApplied {
				b.Fatalf("%s: %s %s", c.ID, o.Status, o.Reason)
			}
		case <-ctx.Done():
			b.Fatalf("outcome of %s: %v", c.ID, ctx.Err())
		}
		lat = append(lat, time.Since(t0))
	}
	if err := h.StopProjector(); err != nil {
		b.Fatal(err)
	}
	// The table a reader reads holds every row: tips, or plain rows.
	count := 0
	q := store.Query{AllPartitions: true}
	if l == wire.LayoutVersioned {
		q.From, q.To = rows.TipRange()
	}
	if err := store.All(ctx, st, table, q, func(store.Entity) error { count++; return nil }); err != nil {
		b.Fatal(err)
	}
	if count != n {
		b.Fatalf("%s: %d current rows from %d commands", l, count, n)
	}
	if l == wire.LayoutPlain {
		projectiontest.CheckPlain(b, st, table)
	}
	return elapsed, lat
}

// percentiles is the median and 99th percentile of lat in milliseconds.
func percentiles(lat []time.Duration) [2]float64 {
	s := append([]time.Duration(nil), lat...)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return [2]float64{ms(s[len(s)/2]), ms(s[(len(s)-1)*99/100])}
}
