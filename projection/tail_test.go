package projection_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
)

// gateStore holds the first transaction until the gate opens.
type gateStore struct {
	store.Store
	once    sync.Once
	reached chan struct{}
	open    chan struct{}
}

func (g *gateStore) Transact(ctx context.Context, table, pk string, ops []store.Op) error {
	g.once.Do(func() {
		close(g.reached)
		<-g.open
	})
	return g.Store.Transact(ctx, table, pk, ops)
}

// TestTailLoss: a message the shard's consumer delivered never reaches the
// projector (here another client pulls it while the projector is busy, as
// a delivery lost in a leader change or on a dropped connection), and
// nothing comes after it to show a gap. The projector notices within
// seconds, not after the five-minute ack wait, and applies it.
func TestTailLoss(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	gate := &gateStore{Store: projectiontest.SQLite(t), reached: make(chan struct{}), open: make(chan struct{})}
	h := projectiontest.Start(t, gate, projectiontest.Options{})
	p := h.StartProjector(projection.Config{})

	c := func(id string, n int) *events.Command {
		return &events.Command{ID: id, Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "x", Entity: events.Entity{"n": events.Int32(int32(n))}}}}
	}
	h.PublishAll(ctx, []*events.Command{c("c1", 1)})
	select {
	case <-gate.reached: // the projector is applying c1
	case <-ctx.Done():
		t.Fatal("the projector never applied c1")
	}
	h.PublishAll(ctx, []*events.Command{c("c2", 2)})
	s, err := h.JS.Stream(ctx, journal.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	_, shard, _, err := journal.ParseSubject(m.Subject)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := h.JS.Consumer(ctx, journal.DefaultStream, fmt.Sprintf("projector-%d", shard))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	stolen := 0
	for range batch.Messages() {
		stolen++ // delivered, never acknowledged: lost to the projector
	}
	if stolen != 1 {
		t.Fatalf("took %d messages from the projector's consumer, want c2", stolen)
	}
	start := time.Now()
	close(gate.open)
	h.WaitProjected(ctx)
	took := time.Since(start)
	if took > 10*time.Second {
		t.Errorf("the lost delivery was applied after %s, want within seconds", took)
	}
	if p.Stats().LostDeliveries.Load() == 0 {
		t.Error("no lost delivery counted")
	}
	row, err := projection.Reader{Store: gate}.Get(ctx, "orders", "p", "x")
	if err != nil || row.Cmd != "c2" {
		t.Fatalf("row x by %s (%v), want c2's", row.Cmd, err)
	}
	t.Logf("lost delivery applied %s after the projector was free", took.Round(time.Millisecond))
}
