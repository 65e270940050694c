package latency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// errCrashed stands for a follower process that died holding a change.
var errCrashed = errors.New("crashed")

// followRestart takes a change into a follower that dies before it
// checkpoints it (its connection is closed while the change is in hand),
// then starts a new follower with the same checkpoint name and returns
// how long the new follower waited for its first change: the one the dead
// one held.
func followRestart(tb testing.TB, e *env, name string) time.Duration {
	tb.Helper()
	ctx := journaltest.Context(tb, 2*time.Minute)
	dead := e.client(tb)
	held := make(chan tj.Change, 1)
	done := make(chan error, 1)
	go func() {
		done <- dead.Follow(ctx, name, benchTable, func(_ context.Context, ch tj.Change) error {
			held <- ch
			dead.Close() // the process dies: no acknowledgement, no nak
			return errCrashed
		}, tj.FollowPartition(name))
	}()
	pos, err := e.c.Publish(ctx, tj.NewCommand(benchTable, name).Upsert("r", tj.Entity{"i": tj.Int64(1)}))
	if err != nil {
		tb.Fatal(err)
	}
	var ch tj.Change
	select {
	case ch = <-held:
	case <-ctx.Done():
		tb.Fatal("the first follower got no change")
	}
	if ch.Seq != pos.Seq {
		tb.Fatalf("the first follower got seq %d, want %d", ch.Seq, pos.Seq)
	}
	<-done
	next := e.client(tb)
	got := make(chan tj.Change, 1)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	go func() {
		done <- next.Follow(fctx, name, benchTable, func(_ context.Context, ch tj.Change) error {
			select {
			case got <- ch:
			default:
			}
			return nil
		}, tj.FollowPartition(name))
	}()
	select {
	case ch = <-got:
	case <-ctx.Done():
		tb.Fatal("the restarted follower got no change")
	}
	took := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	if ch.Seq != pos.Seq {
		tb.Fatalf("the restarted follower got seq %d first, want %d", ch.Seq, pos.Seq)
	}
	return took
}

// BenchmarkFollowRestart measures how long a follower restarted after a
// crash waits for its first change, the one its previous run held
// unacknowledged (first-change-ms), on the embedded store.
func BenchmarkFollowRestart(b *testing.B) {
	e := startEnv(b, "sqlite")
	var worst time.Duration
	for i := 0; b.Loop(); i++ {
		worst = max(worst, followRestart(b, e, fmt.Sprintf("restart-%d-%d", time.Now().UnixNano(), i)))
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "first-change-ms")
	b.ReportMetric(0, "ns/op")
}
