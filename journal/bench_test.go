//go:build unix

package journal_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/proccpu"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// benchEnv starts a server (fsync on or off) with a journal.
func benchEnv(b *testing.B, noSync bool) (jetstream.JetStream, context.Context) {
	b.Helper()
	srv := journaltest.StartServerConfig(b, embedded.Config{Dir: b.TempDir(), Listen: "127.0.0.1:-1", NoSync: noSync})
	_, js := journaltest.Connect(b, srv.ClientURL())
	ctx := journaltest.Context(b, 10*time.Minute)
	if _, err := journal.Ensure(ctx, js, journal.Config{}); err != nil {
		b.Fatal(err)
	}
	return js, ctx
}

func syncModes() []struct {
	name   string
	noSync bool
} {
	return []struct {
		name   string
		noSync bool
	}{{"fsync", false}, {"nosync", true}}
}

// BenchmarkPublishAsync measures the Writer's pipelined publishing against
// raw nats.go PublishMsgAsync of the same payloads (already encoded) with the
// same headers to the same server, in alternating chunks so that both see
// the same server state. The Writer's extra work is validating and encoding
// each command and tracking its future; the cpu metrics count the whole
// process, server included.
func BenchmarkPublishAsync(b *testing.B) {
	for _, mode := range syncModes() {
		b.Run(mode.name, func(b *testing.B) {
			js, ctx := benchEnv(b, mode.noSync)
			w := journal.NewWriter(js, "")
			// Commands are made chunk by chunk, untimed, so that the live
			// heap stays small and neither side pays for scanning it.
			const chunk = 2000
			cmds := make([]*events.Command, 0, chunk)
			type payload struct {
				subject, id string
				data        []byte
			}
			raw := make([]payload, 0, chunk)
			var writerDur, rawDur, writerCPU, rawCPU time.Duration
			cpu := proccpu.Used
			b.ResetTimer()
			for lo := 0; lo < b.N; lo += chunk {
				b.StopTimer()
				cmds, raw = cmds[:0], raw[:0]
				for i := lo; i < min(lo+chunk, b.N); i++ {
					pk := fmt.Sprintf("customer-%d", i%100)
					cmds = append(cmds, command(fmt.Sprintf("w-%09d", i), "orders", pk))
					c := command(fmt.Sprintf("r-%09d", i), "orders", pk)
					data, err := events.Encode(c, wire.ContentTypeMsgpack)
					if err != nil {
						b.Fatal(err)
					}
					raw = append(raw, payload{wire.JournalSubject(c.Table, c.PK), c.ID, data})
				}
				b.StartTimer()

				start, c0 := time.Now(), cpu()
				for _, c := range cmds {
					if _, err := w.PublishAsync(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				writerDur += time.Since(start)
				writerCPU += cpu() - c0

				start, c0 = time.Now(), cpu()
				for _, p := range raw {
					m := &nats.Msg{Subject: p.subject, Data: p.data, Header: nats.Header{
						wire.HeaderContentType:         {wire.ContentTypeMsgpack},
						wire.HeaderSchema:              {wire.SchemaVersion},
						jetstream.MsgIDHeader:          {p.id},
						jetstream.ExpectedStreamHeader: {wire.JournalStream},
					}}
					if _, err := js.PublishMsgAsync(m); err != nil {
						b.Fatal(err)
					}
				}
				select {
				case <-js.PublishAsyncComplete():
				case <-ctx.Done():
					b.Fatal(ctx.Err())
				}
				rawDur += time.Since(start)
				rawCPU += cpu() - c0
			}
			b.StopTimer()
			writerRate := float64(b.N) / writerDur.Seconds()
			rawRate := float64(b.N) / rawDur.Seconds()
			b.ReportMetric(writerRate, "writer-msgs/s")
			b.ReportMetric(rawRate, "raw-msgs/s")
			b.ReportMetric(writerRate/rawRate, "ratio-vs-raw")
			b.ReportMetric(float64(writerCPU.Nanoseconds())/float64(b.N), "writer-cpu-ns/msg")
			b.ReportMetric(float64(rawCPU.Nanoseconds())/float64(b.N), "raw-cpu-ns/msg")
		})
	}
}

// BenchmarkPublishSync measures the latency of one synchronous Publish,
// with fsync before every ack and without.
func BenchmarkPublishSync(b *testing.B) {
	for _, mode := range syncModes() {
		b.Run(mode.name, func(b *testing.B) {
			js, ctx := benchEnv(b, mode.noSync)
			w := journal.NewWriter(js, "")
			cmds := make([]*events.Command, b.N)
			for i := range b.N {
				cmds[i] = command(fmt.Sprintf("s-%09d", i), "orders", fmt.Sprintf("customer-%d", i%100))
			}
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i, c := range cmds {
				start := time.Now()
				if _, err := w.Publish(ctx, c); err != nil {
					b.Fatal(err)
				}
				lat[i] = time.Since(start)
			}
			b.StopTimer()
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(pct(0.50), "p50-µs")
			b.ReportMetric(pct(0.99), "p99-µs")
		})
	}
}
