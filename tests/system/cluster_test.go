package system_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestCluster projects a backlog on a 3-node JetStream cluster with
// --replicas 3: every stream and the ownership bucket are created with
// three replicas, and the batches arrive whole. (A replicated consumer
// sends the status that ends a byte-limited fetch before the messages, so
// fetches with a byte limit lost all but the first message of every batch:
// 15 of 3,000 commands were projected in 3 minutes.)
func TestCluster(t *testing.T) {
	ctx := journaltest.Context(t, 2*time.Minute)
	cluster := journaltest.StartCluster(t, 3)
	h := projectiontest.Attach(t, cluster.URL(), projectiontest.SQLite(t), projectiontest.Options{Journal: journal.Config{Replicas: 3}})
	h.PublishAll(ctx, projectiontest.NewWorkload(7, "orders", 20, 10).Take(3000))

	var logs projectiontest.SyncBuffer
	start := time.Now()
	h.StartProjector(projection.Config{Replicas: 3, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("projector warnings:\n%s", logs.String())
		}
	})
	h.WaitProjected(ctx)
	t.Logf("3,000 commands projected in %s", time.Since(start).Round(time.Millisecond))
	// Deliveries made and never received are what byte-limited fetches
	// caused: none on a healthy cluster. A pull request lost on its way (a
	// replicated consumer just created, its leader not yet elected, on a
	// busy machine) is not that: the shard finds it idle with messages
	// waiting and resumes, as it must, and every command is checked below.
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "deliveries lost") && !strings.Contains(line, "no pull request reached the server") {
			t.Errorf("deliveries lost on a healthy cluster: %s", line)
		}
	}
	for _, name := range []string{wire.JournalStream, wire.OutcomesStream, wire.ChangesStream, "KV_" + projection.OwnersBucket} {
		s, err := h.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("stream %s has %d replicas, want 3", name, got)
		}
	}
	model := h.Model(ctx)
	projectiontest.CompareTable(t, h.Store, "orders", model)
	projectiontest.CheckOutcomes(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)
}
