package erasure_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/wire"
)

// eraseCommands sizes TestEraseLargePartition: go test -run
// TestEraseLargePartition -erase.commands=100000 ./replay/erasure says how
// long erasing a partition of 100,000 commands takes.
var eraseCommands = flag.Int("erase.commands", 1500, "commands in the partition TestEraseLargePartition erases")

// erasePlanOnly stops TestEraseLargePartition after the plan: its figure
// without the secure deletes.
var erasePlanOnly = flag.Bool("erase.plan-only", false, "TestEraseLargePartition: plan the erase, do not run it")

// TestEraseLargePartition erases a partition of more commands than
// JetStream allows consumers (1,000 by default per stream on a small
// server): the plan reads the outcomes of all of them and leaves no
// consumer behind on the streams it read, so an erase right after it
// works too.
func TestEraseLargePartition(t *testing.T) {
	n := *eraseCommands
	if testing.Short() && n > 1500 {
		t.Skip("a large erase: not in -short")
	}
	e, table := largePartition(t, n)
	ctx := e.Ctx
	before := consumers(t, ctx, e.JS)

	start := time.Now()
	plan, err := e.Eraser.PlanErase(ctx, erasure.Target{Table: table, PK: "big"})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	t.Logf("planned the erase of %d commands in %v: %d journal messages, %d outcomes, %d change events", n, time.Since(start).Round(time.Millisecond), len(plan.Journal), len(plan.Outcomes), len(plan.Changes))
	if after := consumers(t, ctx, e.JS); !maps.Equal(after, before) {
		t.Errorf("consumers after the plan: %v, before it: %v", after, before)
	}
	if *erasePlanOnly {
		return
	}
	start = time.Now()
	rec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "big"}, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("erase of a partition of %d commands: %v", n, err)
	}
	t.Logf("erased a partition of %d commands in %v: %.0f commands/s; receipt %+v", n, took.Round(time.Millisecond), float64(n)/took.Seconds(), rec.Removed)
	if !rec.Verified || rec.Removed.JournalMsgs != n || rec.Removed.Outcomes != n || rec.Removed.ChangeEvents != n {
		t.Errorf("receipt: %+v", rec)
	}
	if after := consumers(t, ctx, e.JS); !maps.Equal(after, before) {
		t.Errorf("consumers after the erase: %v, before it: %v", after, before)
	}
	// And a small erase right after it.
	if rec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "small"}, nil); err != nil || !rec.Verified || rec.Removed.Outcomes != 1 {
		t.Errorf("erase right after: %+v, %v", rec, err)
	}
}

// BenchmarkErase erases a partition of -erase.commands commands (the
// partition "big" of a table that also holds a partition "small" of one
// command) on the embedded store, once per iteration, each on a pipeline
// of its own; the publishing and the projector's applying are not timed.
// It reports the time per command (ns/command) beside the time per erase:
//
//	go test -run '^$' -bench BenchmarkErase -benchtime 1x -erase.commands 100000 -timeout 3h ./replay/erasure
//
// The time goes to JetStream's secure deletes: each rewrites and syncs the
// block file (up to 8 MB) that holds the message (docs/erasure.md).
func BenchmarkErase(b *testing.B) {
	n := *eraseCommands
	for b.Loop() {
		b.StopTimer()
		e, table := largePartition(b, n)
		// Not the Env's context: that one ends after five minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
		b.StartTimer()
		rec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "big"}, nil)
		b.StopTimer()
		cancel()
		if err != nil || !rec.Verified || rec.Removed.JournalMsgs != n {
			b.Fatalf("erase of %d commands: %+v, %v", n, rec, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/command")
}

// largePartition starts a pipeline on the embedded store whose journal
// allows erasure, publishes n commands to the partition "big" of a new
// table (a hundred rows, each written n/100 times, each command with a
// value of its own) and one to its partition "small", and waits until
// the projector applied them.
func largePartition(tb testing.TB, n int) (*replaytest.Env, string) {
	b := replaytest.Stores()[0] // the embedded store: the figure is of JetStream's side
	e := replaytest.NewEnv(tb, b.Open(tb), replaytest.With(replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
	table := replaytest.UniqueTable("large")
	var cmds []*events.Command
	for i := range n {
		cmds = append(cmds, upsert(fmt.Sprintf("big-%d", i), table, "big", fmt.Sprintf("r%d", i%100), fmt.Sprintf("SECRET-LARGE-%d", i)))
	}
	small := []*events.Command{upsert("small-0", table, "small", "r", "SECRET-SMALL-0")}
	start := time.Now()
	for i := 0; i < len(cmds); i += 10_000 {
		e.Publish(cmds[i:min(i+10_000, len(cmds))])
	}
	e.Publish(small)
	e.Await(append(ids(cmds[len(cmds)-1:]), small[0].ID))
	tb.Logf("%d commands published and applied in %v", n, time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		// The erase's progress (its plan, its deletes per stream).
		src, err := replay.New(e.Ctx, replay.Config{Store: e.Src.Store(), JetStream: e.JS, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		if err != nil {
			tb.Fatal(err)
		}
		e.SetSource(src)
	}
	return e, table
}

// consumers counts the consumers of the streams an erase reads, by
// stream.
func consumers(t *testing.T, ctx context.Context, js jetstream.JetStream) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range []string{wire.JournalStream, wire.OutcomesStream, wire.ChangesStream} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = info.State.Consumers
	}
	return out
}

// TestEraseWaitBoundsTheProjectorOnly: an Eraser's wait (replay erase
// --wait) bounds the wait for the projector to apply the erase, and not
// the secure deletes after it, which take tens of milliseconds a command:
// with the projector stopped the erase fails after the wait, saying it is
// journaled; with it running, the same erase finishes although removing
// the messages takes longer than the wait.
func TestEraseWaitBoundsTheProjectorOnly(t *testing.T) {
	const wait = 3 * time.Second
	e, table := largePartition(t, 600)
	ctx := e.Ctx
	target := erasure.Target{Table: table, PK: "big"}
	e.Stop()
	start := time.Now()
	_, err := e.Eraser.WithWait(wait).EraseKey(ctx, target, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "journaled") || ctx.Err() != nil {
		t.Fatalf("erase with the projector stopped: %v (after %v)", err, time.Since(start))
	}

	e.StartProjector(projection.Config{Journal: journal.Config{AllowMsgDelete: true}, Logger: replaytest.Quiet})
	start = time.Now()
	rec, err := e.Eraser.WithWait(wait).EraseKey(ctx, target, nil)
	took := time.Since(start)
	if err != nil || !rec.Verified || rec.Removed.JournalMsgs != 600 {
		t.Fatalf("erase taking %v with a wait of %v: %+v, %v", took, wait, rec, err)
	}
	if took <= wait {
		t.Logf("the erase took %v, less than the wait %v: this disk deletes too fast to tell", took, wait)
	}
}
