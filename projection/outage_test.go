package projection_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store/azure"
)

const outageWarning = "table store unavailable; retrying"

// TestStoreOutage runs the projector against an Azurite of its own that is
// down when the projector starts (the table must be created during the
// outage), comes back, then hangs (SIGSTOP) in the middle of the work and
// comes back again. The projector never exits, warns about the outage with
// the reason no more than once every few seconds, says when the store is
// back, and the table then equals the model.
func TestStoreOutage(t *testing.T) {
	ctx := journaltest.Context(t, 3*time.Minute)
	az, err := azurite.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = az.Resume(); az.Stop() })
	if err := az.Halt(); err != nil {
		t.Fatal(err)
	}
	// Short tries, so a hung server fails requests in seconds; no SDK
	// retries, so the projector's own policy is what is tested.
	st, err := azure.New(azure.Config{ConnectionString: az.ConnectionString(), TryTimeout: 2 * time.Second, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := projectiontest.Start(t, st, projectiontest.Options{})
	var logs projectiontest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p := h.StartProjector(projection.Config{Logger: log})
	running := func() {
		t.Helper()
		if exited, err := h.ProjectorExited(); exited {
			t.Fatalf("the projector exited during the outage: %v", err)
		}
	}
	w := projectiontest.NewWorkload(21, "orders", 4, 6)
	publish := func(n int) {
		cmds := make([]*events.Command, n)
		for i := range cmds {
			cmds[i] = w.Next()
		}
		h.PublishAll(ctx, cmds)
	}
	warnings := func() int { return strings.Count(logs.String(), outageWarning) }

	// Down at start.
	start := time.Now()
	publish(100)
	projectiontest.WaitFor(t, ctx, "two outage warnings", func() (bool, error) { return warnings() >= 2, nil })
	running()
	down := time.Since(start)
	if n := warnings(); n > int(down/(5*time.Second))+2 {
		t.Errorf("%d outage warnings in %s: not rate-limited", n, down.Round(time.Millisecond))
	}
	if !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("the warnings do not say why; logs:\n%s", logs.String())
	}
	if err := az.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	h.WaitProjected(ctx)
	projectiontest.CompareTable(t, h.Store, "orders", h.Model(ctx))
	if !strings.Contains(logs.String(), "table store available again") {
		t.Error("no line saying the store is back")
	}

	// Hung in the middle of the work.
	before := warnings()
	if err := az.Pause(); err != nil {
		t.Fatal(err)
	}
	publish(100)
	projectiontest.WaitFor(t, ctx, "an outage warning while the store hangs", func() (bool, error) { return warnings() > before, nil })
	running()
	if err := az.Resume(); err != nil {
		t.Fatal(err)
	}
	h.WaitProjected(ctx)
	model := h.Model(ctx)
	projectiontest.CompareTable(t, h.Store, "orders", model)
	checkOutcomesStatusOnly(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)
	t.Logf("%d outage warnings, %d store retries; down at start for %s", warnings(), p.Stats().StoreRetries.Load(), down.Round(time.Millisecond))
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "table store") || strings.Contains(l, "level=ERROR") {
			t.Log(l)
		}
	}
}
