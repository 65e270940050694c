package status_test

import (
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/projection/status"
)

// TestReadStatusNeverProjected: before any projector ran, no shard has a
// consumer; Read counts each shard's messages as pending (with an
// ephemeral consumer it deletes again), with their lag, and lists the
// shards that have some as unowned.
func TestReadStatusNeverProjected(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	h := projectiontest.Start(t, projectiontest.SQLite(t), projectiontest.Options{Journal: journal.Config{Shards: 4}})
	h.PublishAll(ctx, projectiontest.NewWorkload(3, "orders", 3, 5).Take(60))

	ov, err := status.Read(ctx, h.JS, status.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.Shards) != 4 || ov.Totals.Pending != 60 || ov.Totals.Owned != 0 {
		t.Fatalf("status %+v, want 4 shards, 60 pending, none owned", ov)
	}
	var unowned []int
	for _, s := range ov.Shards {
		if s.Consumer || s.Owner != "" || s.Applied != 0 || (s.Pending > 0) != (s.LagSeconds > 0) {
			t.Errorf("shard %d: %+v", s.Shard, s)
		}
		if s.Pending > 0 {
			unowned = append(unowned, s.Shard)
		}
	}
	if len(unowned) == 0 || len(unowned) != len(ov.Totals.Unowned) {
		t.Errorf("unowned %v, shards with pending commands %v", ov.Totals.Unowned, unowned)
	}
	stream, err := h.JS.Stream(ctx, h.Journal.Name())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Errorf("%d consumers left on the journal, want none", info.State.Consumers)
	}
}
