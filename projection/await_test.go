package projection

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// lostAck is the future of an asynchronous publish whose ack was lost (a
// reconnect to another node of a cluster): it never completes. Its message
// is real, and re-sent to a real server.
type lostAck struct{ msg *nats.Msg }

func (l lostAck) Ok() <-chan *jetstream.PubAck { return nil }
func (l lostAck) Err() <-chan error            { return nil }
func (l lostAck) Msg() *nats.Msg               { return l.msg }

// TestAwaitLostAcks: when the acks of a batch's asynchronous publishes are
// lost, the batch waits out the ack timeout once, not once per message,
// then re-sends them all synchronously. (Waiting once per message held a
// shard of the chaos test for minutes.)
func TestAwaitLostAcks(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	s, err := journal.EnsureOutcomes(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { asyncAckTimeout = d }(asyncAckTimeout)
	asyncAckTimeout = 200 * time.Millisecond

	const n = 20
	var fs []jetstream.PubAckFuture
	for i := 0; i < n; i++ {
		msg, err := journal.OutcomeMsg(journal.Outcome{ID: "c", Seq: uint64(i + 1), Status: journal.StatusApplied})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, lostAck{msg})
	}
	start := time.Now()
	if err := newPublisher(js, false, NopObserver{}).await(ctx, fs); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > n*asyncAckTimeout/2 {
		t.Errorf("awaiting %d lost acks took %s; the timeout is %s for the batch", n, took, asyncAckTimeout)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != n {
		t.Errorf("%d outcomes stored after the re-send, want %d", info.State.Msgs, n)
	}
}
