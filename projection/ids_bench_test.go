package projection

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// BenchmarkIDFilterRead times how fast the first-seen filter reads a
// journal of 200,000 commands from its start (what a projector does before
// its batches skip their look-ups): ns and messages a second.
func BenchmarkIDFilterRead(b *testing.B) {
	const n = 200_000
	ctx := journaltest.Context(b, 10*time.Minute)
	srv := journaltest.StartServer(b)
	_, js := journaltest.Connect(b, srv.ClientURL())
	j, err := journal.Ensure(ctx, js, journal.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		m := nats.NewMsg(wire.JournalSubject("bench", fmt.Sprintf("p%d", i%1000)))
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("cmd-%09d", i))
		m.Data = []byte("x")
		if _, err := js.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				b.Fatal(ctx.Err())
			}
		}
	}
	b.ResetTimer()
	var took time.Duration
	for range b.N {
		f := newIDFilter(j, DefaultIDFilter, journaltest.Logger())
		rctx, stop := context.WithCancel(ctx)
		start := time.Now()
		done := make(chan struct{})
		go func() { defer close(done); f.run(rctx) }()
		for {
			f.mu.Lock()
			pos, moved := f.pos, f.moved
			f.mu.Unlock()
			if pos >= n {
				break
			}
			select {
			case <-moved:
			case <-ctx.Done():
				b.Fatal(ctx.Err())
			}
		}
		took += time.Since(start)
		stop()
		<-done
	}
	b.ReportMetric(float64(n*b.N)/took.Seconds(), "msgs/s")
}
