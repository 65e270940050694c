package projection_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

// slowRecordJS wraps the real server and holds back what a slow or
// failing server would, which a real one cannot be made to do on demand:
// the stored outcome of one applied command (gateOutcome, until release),
// or the acknowledgement of one command's change event (gateChange, which
// then fails: no ack, and the re-send refused once).
type slowRecordJS struct {
	jetstream.JetStream
	gateOutcome, gateChange string // command IDs
	release                 chan struct{}

	mu         sync.Mutex
	changeFail int // re-sends of the gated change event still to refuse
}

var errChangeRefused = errors.New("change event refused (injected)")

func (s *slowRecordJS) outcomeGated(m *nats.Msg) bool {
	return s.gateOutcome != "" && m.Subject == wire.OutcomeSubject(s.gateOutcome) && strings.Contains(string(m.Data), `"status":"applied"`)
}

func (s *slowRecordJS) changeGated(m *nats.Msg) bool {
	return s.gateChange != "" && strings.HasPrefix(m.Subject, "changes.") && strings.Contains(string(m.Data), `"cmd":"`+s.gateChange+`"`)
}

func (s *slowRecordJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	switch {
	case s.outcomeGated(m):
		<-s.release
	case s.changeGated(m):
		s.mu.Lock()
		first := s.changeFail == 0
		if first {
			s.changeFail = 1
		}
		s.mu.Unlock()
		if first {
			errs := make(chan error, 1)
			go func() { <-s.release; errs <- errChangeRefused }()
			return failedAck{m, errs}, nil
		}
	}
	return s.JetStream.PublishMsgAsync(m, opts...)
}

func (s *slowRecordJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if s.changeGated(m) {
		s.mu.Lock()
		refuse := s.changeFail == 1
		s.changeFail = 2
		s.mu.Unlock()
		if refuse {
			return nil, errChangeRefused
		}
	}
	return s.JetStream.PublishMsg(ctx, m, opts...)
}

// failedAck is the future of an asynchronous publish the server refused.
type failedAck struct {
	msg  *nats.Msg
	errs chan error
}

func (f failedAck) Ok() <-chan *jetstream.PubAck { return nil }
func (f failedAck) Err() <-chan error            { return f.errs }
func (f failedAck) Msg() *nats.Msg               { return f.msg }

// TestNextBatchBeforeRecord: while c1's stored outcome is held back, the
// shard takes its next batch (SPEC §5, "The next batch before the durable
// record"). c1's ID sent again with another body is decided on the outcome
// kept in memory and refused (body-differs) as if that outcome were
// stored; the row alone would call it a duplicate. Nothing is
// acknowledged past c1 until its outcome is stored.
func TestNextBatchBeforeRecord(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	h := projectiontest.Start(t, projectiontest.SQLite(t), projectiontest.Options{})
	js := &slowRecordJS{JetStream: h.JS, gateOutcome: "c1", release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(js.release) })
	defer released()
	runProjector(t, ctx, js, h)

	reader := outcomes.NewReader(h.JS)
	w1 := watch(t, reader, "c1")
	c1 := h.PublishAll(ctx, []*events.Command{oneRow("c1", events.OpInsert, 1, nil)})[0]
	if o, err := w1.Await(ctx, c1, false); err != nil || o.Status != wire.StatusApplied {
		t.Fatalf("c1's reply: %+v, %v; want applied", o, err)
	}
	w2 := watch(t, reader, "c1")
	// c1's ID again with another body, without Nats-Msg-Id: the row says
	// c1 wrote it, only c1's outcome says with which body.
	h.PublishAll(ctx, []*events.Command{oneRow("c1", events.OpInsert, 2, nil)})
	again, err := h.Journal.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o, err := w2.Await(ctx, again, false)
	if err != nil {
		t.Fatalf("the re-send's outcome, with c1's outcome held back: %v", err)
	}
	if o.Status != wire.StatusRejected || o.Code != wire.CodeBodyDiffers {
		t.Fatalf("c1's ID with another body while c1's outcome is not stored: %+v, want rejected, body-differs", o)
	}
	shard := shardOf(t, ctx, h, c1)
	if a := applied(t, ctx, h, shard); a >= c1 {
		t.Fatalf("the shard acknowledged seq %d with c1's (%d) outcome not stored", a, c1)
	}

	released()
	waitFor(ctx, t, "both acknowledged", func() bool { return applied(t, ctx, h, shard) >= again })
	hist, err := reader.History(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	// Stored in the order they were: the re-send's first, c1's once released.
	slices.SortFunc(hist, func(a, b wire.Outcome) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(hist) != 2 || hist[0].Seq != c1 || hist[0].Status != wire.StatusApplied || hist[1].Seq != again || hist[1].Code != wire.CodeBodyDiffers {
		t.Errorf("c1's outcomes %+v, want applied at %d, body-differs at %d", hist, c1, again)
	}
	tip, err := h.Store.Get(ctx, "orders", "p", rows.TipKey("x"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := rows.DecodeRow(tip); err != nil || r.Version != 0 || r.Seq != c1 {
		t.Errorf("row x at version %d seq %d (%v), want version 0 of c1 (seq %d): applied once", r.Version, r.Seq, err, c1)
	}
}

// TestRecordFailsUnderNextBatch: c1's change event is refused while c2,
// of the same row, is applied in the next batch. c2's change event must
// not be sent before c1's is stored, and both batches are processed again:
// the change feed holds each version once, in the row's order, and every
// outcome is stored.
func TestRecordFailsUnderNextBatch(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	h := projectiontest.Start(t, projectiontest.SQLite(t), projectiontest.Options{})
	js := &slowRecordJS{JetStream: h.JS, gateChange: "c1", release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(js.release) })
	defer released()
	runProjector(t, ctx, js, h)

	reader := outcomes.NewReader(h.JS)
	w1, w2 := watch(t, reader, "c1"), watch(t, reader, "c2")
	cmd1, cmd2 := oneRow("c1", events.OpInsert, 1, nil), oneRow("c2", events.OpMerge, 2, nil)
	c1 := h.PublishAll(ctx, []*events.Command{cmd1})[0]
	if o, err := w1.Await(ctx, c1, false); err != nil || o.Status != wire.StatusApplied {
		t.Fatalf("c1's reply: %+v, %v; want applied", o, err)
	}
	c2 := h.PublishAll(ctx, []*events.Command{cmd2})[0]
	if o, err := w2.Await(ctx, c2, false); err != nil || o.Status != wire.StatusApplied || o.Rows[0].Version != 1 {
		t.Fatalf("c2's reply while c1's change event is in flight: %+v, %v; want applied at version 1", o, err)
	}
	released() // c1's change event fails now

	shard := shardOf(t, ctx, h, c1)
	waitFor(ctx, t, "both acknowledged", func() bool { return applied(t, ctx, h, shard) >= c2 })
	for id, seq := range map[string]uint64{"c1": c1, "c2": c2} {
		o, err := reader.Latest(ctx, id)
		if err != nil || o.Seq != seq || o.Status != wire.StatusApplied {
			t.Errorf("%s's stored outcome %+v, %v; want applied at %d", id, o, err, seq)
		}
	}
	// The table and the change feed are a projection of the journal: each
	// version once, a row's events in journal order.
	m := projectiontest.NewModel()
	m.Apply(c1, cmd1)
	m.Apply(c2, cmd2)
	projectiontest.CompareTable(t, h.Store, "orders", m)
	h.CheckChangeFeed(ctx, "orders", m)
}

// runProjector runs a projector on h's store through js until the test
// ends.
func runProjector(t *testing.T, ctx context.Context, js jetstream.JetStream, h *projectiontest.Harness) {
	t.Helper()
	pctx, stop := context.WithCancel(ctx)
	p, err := projection.New(pctx, js, h.Store, projection.Config{Logger: projectiontest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run(pctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("projector: %v", err)
		}
	})
}

func watch(t *testing.T, r *outcomes.Reader, id string) *outcomes.Watch {
	t.Helper()
	w, err := r.Watch(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// shardOf is the shard of the journal message at seq.
func shardOf(t *testing.T, ctx context.Context, h *projectiontest.Harness, seq uint64) int {
	t.Helper()
	m, err := h.Journal.Get(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	_, shard, _, err := wire.ParseJournalSubject(m.Subject)
	if err != nil {
		t.Fatal(err)
	}
	return shard
}

// applied is how far the projector acknowledged shard.
func applied(t *testing.T, ctx context.Context, h *projectiontest.Harness, shard int) uint64 {
	t.Helper()
	stream, err := h.JS.Stream(ctx, h.Journal.Name())
	if err != nil {
		t.Fatal(err)
	}
	a, err := journal.AppliedThrough(ctx, stream, wire.DefaultDurable, shard)
	if err != nil {
		t.Fatal(err)
	}
	return a.Through
}
