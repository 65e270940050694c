package journal_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// TestAppliedThrough reads a shard's applied floor and pending count from
// its consumer as the projector leaves it: nothing without a consumer,
// then through the last acknowledged message with the rest pending.
func TestAppliedThrough(t *testing.T) {
	e := newEnv(t, journal.Config{Shards: 1})
	w := journal.NewWriter(e.js, e.j.Name())
	var seqs []uint64
	for i := range 3 {
		r, err := w.Publish(e.ctx, command(fmt.Sprintf("cmd-%d", i), "orders", "pk-1"))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, r.Seq)
	}
	stream, err := e.js.Stream(e.ctx, e.j.Name())
	if err != nil {
		t.Fatal(err)
	}
	if a, err := journal.AppliedThrough(e.ctx, stream, "proj", 0); err != nil || a != (journal.Applied{}) {
		t.Fatalf("no consumer: %+v, %v; want nothing applied", a, err)
	}
	cons, err := stream.CreateConsumer(e.ctx, jetstream.ConsumerConfig{
		Durable:       wire.ConsumerName("proj", 0),
		FilterSubject: wire.ShardFilter(0),
		AckPolicy:     jetstream.AckAllPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := journal.AppliedThrough(e.ctx, stream, "proj", 0); err != nil || a != (journal.Applied{Consumer: true, Pending: 3}) {
		t.Fatalf("fresh consumer: %+v, %v; want none applied, 3 pending", a, err)
	}
	batch, err := cons.FetchNoWait(2)
	if err != nil {
		t.Fatal(err)
	}
	var last jetstream.Msg
	for m := range batch.Messages() {
		last = m
	}
	if err := last.DoubleAck(e.ctx); err != nil {
		t.Fatal(err)
	}
	want := journal.Applied{Consumer: true, Through: seqs[1], Pending: 1}
	if a, err := journal.AppliedThrough(e.ctx, stream, "proj", 0); err != nil || a != want {
		t.Fatalf("after acknowledging 2: %+v, %v; want %+v", a, err, want)
	}
	info, err := cons.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := journal.AppliedOf(info); a != want {
		t.Errorf("AppliedOf: %+v, want %+v", a, want)
	}
}
