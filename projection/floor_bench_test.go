package projection_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/proccpu"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// floorSeq names the floor's streams uniquely across rounds.
var floorSeq atomic.Int64

// journalFloor does, on the harness's server, the JetStream work the
// projector does per command and nothing else, and returns the CPU this
// process spent on it: pull the round's n journal messages in batches of
// 1,024 (the projector's FetchBatch); per message publish one outcome and
// one change event (the bytes of the round's first real ones, each with the
// message's own Nats-Msg-Id and a subject of its own as the real ones have)
// into streams configured as OUTCOMES and CHANGES; await every
// acknowledgement; acknowledge each batch. No decoding, no store, no
// decisions: a projector that keeps the contract's messages per command
// (SPEC §5 outcomes, §7 change events) cannot spend less CPU on them, so
// cpu-x-batched-floor is the lowest cpu-x-batched any such projector can reach
// on this server and store.
func journalFloor(b *testing.B, h *projectiontest.Harness, n int) time.Duration {
	b.Helper()
	ctx := journaltest.Context(b, 5*time.Minute)
	id := floorSeq.Add(1)
	outPrefix, outTmpl := floorStream(b, ctx, h.JS, wire.OutcomesStream, id)
	chgPrefix, chgTmpl := floorStream(b, ctx, h.JS, wire.ChangesStream, id)
	cons, err := h.JS.CreateConsumer(ctx, h.Journal.Name(), jetstream.ConsumerConfig{AckPolicy: jetstream.AckAllPolicy})
	if err != nil {
		b.Fatal(err)
	}

	cpu := proccpu.Used()
	for done := 0; done < n; {
		batch, err := cons.FetchNoWait(1024)
		if err != nil {
			b.Fatal(err)
		}
		var last jetstream.Msg
		futures := make([]jetstream.PubAckFuture, 0, 2048)
		for m := range batch.Messages() {
			cmd := m.Headers().Get(nats.MsgIdHdr)
			part := strings.TrimPrefix(m.Subject(), h.Journal.Name()+".")
			for _, p := range []struct {
				subject string
				tmpl    *nats.Msg
				msgID   string
			}{
				{outPrefix + wire.OutcomeSubject(cmd), outTmpl, cmd},
				{chgPrefix + part, chgTmpl, cmd + "/0"},
			} {
				msg := &nats.Msg{Subject: p.subject, Data: p.tmpl.Data, Header: nats.Header{}}
				msg.Header.Set(nats.MsgIdHdr, p.msgID)
				f, err := h.JS.PublishMsgAsync(msg)
				if err != nil {
					b.Fatal(err)
				}
				futures = append(futures, f)
			}
			last = m
			done++
		}
		if err := batch.Error(); err != nil {
			b.Fatal(err)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			case <-ctx.Done():
				b.Fatal(ctx.Err())
			}
		}
		if last != nil {
			if err := last.Ack(); err != nil {
				b.Fatal(err)
			}
			continue
		}
		// Nothing delivered: FetchNoWait answers at once, so without this
		// the loop spins past every deadline (a round once ran 21 minutes
		// at full CPU and was killed without saying where).
		select {
		case <-ctx.Done():
			b.Fatalf("journal floor: %d of %d messages delivered: %v", done, n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return proccpu.Used() - cpu
}

// floorStream creates a stream configured as the stream name, under its own
// name and subjects, deleted when the benchmark ends, and returns its
// subject prefix and name's first message as the template of what the
// floor publishes.
func floorStream(b *testing.B, ctx context.Context, js jetstream.JetStream, name string, id int64) (string, *nats.Msg) {
	b.Helper()
	s, err := js.Stream(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	info := s.CachedInfo()
	raw, err := s.GetMsg(ctx, info.State.FirstSeq)
	if err != nil {
		b.Fatalf("first message of %s: %v", name, err)
	}
	cfg := info.Config
	cfg.Name = "FLOOR_" + name + "_" + strconv.FormatInt(id, 10)
	prefix := strings.ToLower(cfg.Name) + "."
	cfg.Subjects = []string{prefix + ">"}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = js.DeleteStream(context.Background(), cfg.Name) })
	return prefix, &nats.Msg{Data: raw.Data}
}
