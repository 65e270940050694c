package move_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/move"
	"github.com/tablejournal/tablejournal/wire"
)

// env is one test's server, connection and source journal.
type env struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	ctx context.Context
}

func newEnv(t *testing.T, cfg journal.Config) *env {
	t.Helper()
	srv := journaltest.StartServer(t)
	nc, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, 2*time.Minute)
	if _, err := journal.Ensure(ctx, js, cfg); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return &env{nc: nc, js: js, ctx: ctx}
}

// publish writes n commands to stream, spread over partitions, with ids
// prefix-<i>, and returns their sequences.
func (e *env) publish(t *testing.T, stream, prefix string, n int) []uint64 {
	t.Helper()
	w := journal.NewWriter(e.js, stream)
	seqs := make([]uint64, 0, n)
	for i := range n {
		res, err := w.Publish(e.ctx, &events.Command{
			ID: fmt.Sprintf("%s-%d", prefix, i), Table: "orders", PK: fmt.Sprintf("p%d", i%7),
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%3), Entity: edm.Entity{"n": edm.Int64(int64(i))}}},
		})
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		seqs = append(seqs, res.Seq)
	}
	return seqs
}

func (e *env) stream(t *testing.T, name string) *jetstream.StreamInfo {
	t.Helper()
	s, err := e.js.Stream(e.ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// gappy makes a trimmable journal whose first sequences were purged, with
// holes inside and two deleted messages at its end.
func gappy(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, journal.Config{AllowTrim: true, Shards: 4})
	seqs := e.publish(t, "", "c", 40)
	s, err := e.js.Stream(e.ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(e.ctx, jetstream.WithPurgeSequence(5)); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{seqs[10], seqs[11], seqs[20], seqs[38], seqs[39]} {
		if err := s.DeleteMsg(e.ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// TestMoveKeepsSequences: a move copies every message with its sequence,
// subject, headers, body and time, gaps included (a trimmed start, holes,
// a deleted end); the new journal has the old one's shards, transform and
// metadata and the deny flags asked for, and takes the next command at the
// next sequence; the old one takes no more.
func TestMoveKeepsSequences(t *testing.T) {
	e := gappy(t)
	before := e.stream(t, wire.JournalStream)

	r, err := move.Run(e.ctx, e.js, move.Config{To: "J2", AllowMsgDelete: true})
	if err != nil || r.State != move.StateDryRun || r.Source.Messages != before.State.Msgs || r.Source.Gaps != 5 {
		t.Fatalf("dry run: %+v, %v", r, err)
	}
	if _, err := e.js.Stream(e.ctx, "J2"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("dry run made J2: %v", err)
	}

	r, err = move.Run(e.ctx, e.js, move.Config{To: "J2", AllowMsgDelete: true, Apply: true})
	if err != nil || r.State != move.StateCopied || !r.Created || r.Verified == nil || !r.Verified.Equal {
		t.Fatalf("copy: %+v, %v", r, err)
	}
	// The journal takes commands while the copy follows it.
	e.publish(t, "", "late", 3)

	r, err = move.Run(e.ctx, e.js, move.Config{To: "J2", AllowMsgDelete: true, Apply: true, Cutover: true})
	if err != nil || r.State != move.StateMoved || r.Verified == nil || !r.Verified.Equal {
		t.Fatalf("cutover: %+v, %v", r, err)
	}
	src, dst := e.stream(t, wire.JournalStream), e.stream(t, "J2")
	if src.State.FirstSeq != dst.State.FirstSeq || src.State.LastSeq != dst.State.LastSeq || src.State.Msgs != dst.State.Msgs {
		t.Fatalf("state: old %+v, new %+v", src.State, dst.State)
	}
	if r.Verified.Source.Messages != src.State.Msgs {
		t.Errorf("verified %d messages, the journal holds %d", r.Verified.Source.Messages, src.State.Msgs)
	}
	j, err := journal.Open(e.ctx, e.js, "J2")
	if err != nil || j.Shards() != 4 {
		t.Fatalf("open J2: %v", err)
	}
	c := dst.Config
	if c.DenyDelete || !c.DenyPurge || c.Metadata[wire.MetadataAllowMsgDelete] != "true" || c.Metadata[wire.MetadataAllowTrim] != "" ||
		c.Metadata[wire.MetadataMovedFrom] != wire.JournalStream || c.Mirror != nil || c.Duplicates != src.Config.Duplicates {
		t.Errorf("J2 config: %+v", c)
	}
	if *c.SubjectTransform != *src.Config.SubjectTransform {
		t.Errorf("J2 transform %+v, old %+v", c.SubjectTransform, src.Config.SubjectTransform)
	}
	next := e.publish(t, "J2", "after", 1)
	if next[0] != src.State.LastSeq+1 {
		t.Errorf("next command at %d, want %d", next[0], src.State.LastSeq+1)
	}
	if _, err := journal.NewWriter(e.js, wire.JournalStream, journal.WithRetryBudget(time.Second)).Publish(e.ctx, &events.Command{
		ID: "old", Table: "orders", PK: "p", Ops: []events.RowOp{{Op: events.OpDelete, RK: "r"}}}); err == nil {
		t.Error("the old journal still takes commands")
	}
	if after := e.stream(t, wire.JournalStream); after.State.LastSeq != src.State.LastSeq {
		t.Errorf("old journal grew to %d", after.State.LastSeq)
	}
}
