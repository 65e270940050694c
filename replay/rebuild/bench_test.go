package rebuild_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
)

// BenchmarkReplay measures, on each backend, over one seeded workload that
// a real projector applied first:
//
//   - rebuild: commands/s, and as a ratio against the projector's rate on
//     the same store (ratio-vs-projector, target >= 0.8);
//   - snapshot and load: entities/s.
func BenchmarkReplay(b *testing.B) {
	for _, be := range replaytest.Stores() {
		b.Run(be.Name, func(b *testing.B) {
			n, npk := 5000, 64
			if be.Small {
				n, npk = 1000, 16
			}
			st := be.Open(b)
			ctx := journaltest.Context(b, 10*time.Minute)
			h := projectiontest.Start(b, st, projectiontest.Options{})
			e := &replaytest.Env{Harness: h, T: b, Ctx: ctx}
			pks := make([]string, npk)
			for i := range pks {
				pks[i] = fmt.Sprintf("customer-%03d", i)
			}
			table := replaytest.UniqueTable("Bench")
			cmds := replaytest.Workload(rand.New(rand.NewPCG(1, 2)), table, "c", n, pks, []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"})
			e.Publish(cmds)
			ids := make([]string, len(cmds))
			for i, c := range cmds {
				ids[i] = c.ID
			}
			// The projector's rate: from its start until the last outcome.
			start := time.Now()
			pctx, cancel := context.WithCancel(context.Background())
			p, err := projection.New(pctx, h.JS, st, projection.Config{Logger: replaytest.Quiet})
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- p.Run(pctx) }()
			e.Await(ids)
			projRate := float64(n) / time.Since(start).Seconds()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			rp, err := replay.New(ctx, replay.Config{Store: st, JetStream: h.JS, Logger: replaytest.Quiet})
			if err != nil {
				b.Fatal(err)
			}

			b.Run("rebuild", func(b *testing.B) {
				var cmds int64
				b.ResetTimer()
				for range b.N {
					stats, err := rebuild.New(rp).Rebuild(ctx, rebuild.Config{Table: table, Into: replaytest.UniqueTable("Rebuilt")})
					if err != nil {
						b.Fatal(err)
					}
					cmds += stats.Commands
				}
				rate := float64(cmds) / b.Elapsed().Seconds()
				b.ReportMetric(rate, "cmds/s")
				b.ReportMetric(projRate, "projector-cmds/s")
				b.ReportMetric(rate/projRate, "ratio-vs-projector")
			})
			// verify: rows of the table checked per second, against a
			// rebuild of the same table timed in the same round (verify
			// re-projects the journal, then compares every row).
			b.Run("verify", func(b *testing.B) {
				var rows int64
				var verifyTime, rebuildTime time.Duration
				for range b.N {
					start := time.Now()
					if _, err := rebuild.New(rp).Rebuild(ctx, rebuild.Config{Table: table, Into: replaytest.UniqueTable("Rebuilt")}); err != nil {
						b.Fatal(err)
					}
					rebuildTime += time.Since(start)
					start = time.Now()
					st, err := rebuild.New(rp).Verify(ctx, rebuild.VerifyConfig{Table: table})
					if err != nil || !st.Identical() {
						b.Fatal(st, err)
					}
					verifyTime += time.Since(start)
					rows += st.Rows
				}
				b.ReportMetric(float64(rows)/verifyTime.Seconds(), "rows/s")
				b.ReportMetric(float64(rows)/rebuildTime.Seconds(), "rebuild-rows/s")
				b.ReportMetric(rebuildTime.Seconds()/verifyTime.Seconds(), "ratio-vs-rebuild")
			})
			var snap []byte
			b.Run("snapshot", func(b *testing.B) {
				var ents int64
				b.ResetTimer()
				for range b.N {
					var buf bytes.Buffer
					stats, err := snapshot.New(rp).Take(ctx, &buf, snapshot.Config{Table: table})
					if err != nil {
						b.Fatal(err)
					}
					ents += stats.Entities
					snap = buf.Bytes()
				}
				b.ReportMetric(float64(ents)/b.Elapsed().Seconds(), "entities/s")
				b.ReportMetric(float64(len(snap))/float64(ents/int64(b.N)), "bytes/entity")
			})
			b.Run("load", func(b *testing.B) {
				var ents int64
				b.ResetTimer()
				for range b.N {
					stats, err := snapshot.New(rp).Load(ctx, bytes.NewReader(snap), snapshot.LoadConfig{Into: replaytest.UniqueTable("Loaded")})
					if err != nil {
						b.Fatal(err)
					}
					ents += stats.Entities
				}
				b.ReportMetric(float64(ents)/b.Elapsed().Seconds(), "entities/s")
			})
		})
	}
}

// BenchmarkAsOfRow reads one row at history depths 1, 100 and 10,000, at
// its tip (one point read), one version back and a quarter of the way into
// its history (both the tip read and one unfiltered read of the first
// version row at or before the point): version rows are keyed by sequence,
// so the deep read scans nothing. ratio-vs-tip is the tip's time over the
// deep read's, ratio-vs-previous that of one version back, measured in the
// same round: at least 0.5 means deep within 2x.
func BenchmarkAsOfRow(b *testing.B) {
	for _, be := range replaytest.Stores() {
		b.Run(be.Name, func(b *testing.B) {
			st := be.Open(b)
			rp, err := replay.New(context.Background(), replay.Config{Store: st})
			if err != nil {
				b.Fatal(err)
			}
			table := replaytest.UniqueTable("Depth")
			for di, depth := range []int{1, 100, 10_000} {
				base := uint64(di * 100_000)
				rk := fmt.Sprintf("row-%d", depth)
				replaytest.DeepRow(b, st, table, "p", rk, depth, base, false)
				tip, deep := base+uint64(depth), base+uint64(max(1, depth/4))
				prev := max(tip-1, base+1)
				b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
					var tipTime, prevTime, deepTime time.Duration
					for range b.N {
						for _, q := range []struct {
							seq uint64
							sum *time.Duration
						}{{tip, &tipTime}, {prev, &prevTime}, {deep, &deepTime}} {
							start := time.Now()
							row, ok, err := history.New(rp).AsOfRow(context.Background(), table, "p", rk, q.seq)
							*q.sum += time.Since(start)
							if err != nil || !ok || row.Seq != q.seq {
								b.Fatal(row.Seq, ok, err)
							}
						}
					}
					b.ReportMetric(float64(tipTime.Nanoseconds())/float64(b.N), "tip-ns")
					b.ReportMetric(float64(deepTime.Nanoseconds())/float64(b.N), "deep-ns")
					b.ReportMetric(float64(prevTime.Nanoseconds())/float64(b.N), "previous-ns")
					b.ReportMetric(tipTime.Seconds()/deepTime.Seconds(), "ratio-vs-tip")
					b.ReportMetric(prevTime.Seconds()/deepTime.Seconds(), "ratio-vs-previous")
				})
			}
		})
	}
}
