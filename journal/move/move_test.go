package move_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

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
	// The journal takes commands while the copy follows it, and a table
	// layout setting, its last message, which the move must carry.
	e.publish(t, "", "late", 3)
	old, err := journal.Open(e.ctx, e.js, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	setting, err := tablelayout.Set(e.ctx, old, "fresh", wire.LayoutPlain)
	if err != nil {
		t.Fatal(err)
	}

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
	if tl, err := tablelayout.Of(e.ctx, j, "fresh"); err != nil || tl.Layout != wire.LayoutPlain || tl.Seq != setting {
		t.Errorf("J2's layout of the table set before the move: %+v, %v; want plain at %d", tl, err, setting)
	}
	c := dst.Config
	if !slices.Equal(c.Subjects, wire.JournalSubjects()) {
		t.Errorf("J2 subjects %v, want %v", c.Subjects, wire.JournalSubjects())
	}
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

// TestMoveTrailingGap: messages deleted at the journal's end are kept as a
// gap (a mirror stops at the last stored message), so the next command
// takes the sequence it would have had; the old stream is deleted when
// asked.
func TestMoveTrailingGap(t *testing.T) {
	e := newEnv(t, journal.Config{AllowMsgDelete: true})
	seqs := e.publish(t, "", "c", 10)
	s, err := e.js.Stream(e.ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs[8:] {
		if err := s.SecureDeleteMsg(e.ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	r, err := move.Run(e.ctx, e.js, move.Config{To: "J2", AllowTrim: true, Apply: true, Cutover: true})
	if err != nil || r.State != move.StateMoved || r.SourceDeleted || r.Target.LastSeq != seqs[9] || r.Target.Messages != 8 {
		t.Fatalf("move: %+v, %v", r, err)
	}
	// Run again with the old stream there: both are checked again.
	r, err = move.Run(e.ctx, e.js, move.Config{To: "J2", AllowTrim: true, Apply: true, Cutover: true, DeleteSource: true})
	if err != nil || r.State != move.StateMoved || !r.SourceDeleted || r.Verified == nil || !r.Verified.Equal || r.Verified.UpTo != seqs[7] {
		t.Fatalf("move again, deleting the old stream: %+v, %v", r, err)
	}
	if _, err := e.js.Stream(e.ctx, wire.JournalStream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("old journal: %v", err)
	}
	c := e.stream(t, "J2").Config
	if c.DenyDelete || c.DenyPurge || c.Metadata[wire.MetadataAllowTrim] != "true" || c.Metadata[wire.MetadataAllowMsgDelete] != "" {
		t.Errorf("J2 config: %+v", c)
	}
	if next := e.publish(t, "J2", "after", 1); next[0] != seqs[9]+1 {
		t.Errorf("next command at %d, want %d", next[0], seqs[9]+1)
	}
	// Run again, the finished move is reported, not redone.
	r, err = move.Run(e.ctx, e.js, move.Config{To: "J2", AllowTrim: true, Apply: true, Cutover: true, DeleteSource: true})
	if err != nil || r.State != move.StateMoved || !r.SourceDeleted {
		t.Fatalf("again: %+v, %v", r, err)
	}
}

// TestMoveResumes: a move stopped half way finishes when run again,
// verified: its context cancelled while it waits for the copy (a cutover
// so stopped gives the old journal its subjects back), or killed there,
// after the old journal stopped taking commands (the run's goroutine ends
// on the spot, as a killed process would).
func TestMoveResumes(t *testing.T) {
	cases := []struct {
		name        string
		cutover     bool
		kill        bool
		wantRetired bool
		wantErr     error
	}{
		{name: "copy cancelled", wantErr: context.Canceled},
		{name: "cutover cancelled", cutover: true, wantErr: context.Canceled},
		{name: "cutover killed", cutover: true, kill: true, wantRetired: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, journal.Config{})
			e.publish(t, "", "c", 300)
			cfg := move.Config{To: "J2", Apply: true, Cutover: tc.cutover}
			ctx, cancel := context.WithCancel(e.ctx)
			cfg.Progress = func(copied, total uint64) {
				if tc.kill {
					runtime.Goexit()
				}
				cancel()
			}
			var (
				r   move.Report
				err error
			)
			done := make(chan struct{})
			go func() {
				defer close(done)
				r, err = move.Run(ctx, e.js, cfg)
			}()
			<-done
			if !errors.Is(err, tc.wantErr) || (err == nil) != tc.kill {
				t.Fatalf("stopped run: %+v, %v", r, err)
			}
			if retired := e.stream(t, wire.JournalStream).Config.Metadata[wire.MetadataMovedTo] == "J2"; retired != tc.wantRetired {
				t.Errorf("stopped run: retired %v", retired)
			}
			cfg.Progress = nil
			r, err = move.Run(e.ctx, e.js, cfg)
			want := move.StateCopied
			if tc.cutover {
				want = move.StateMoved
			}
			if err != nil || r.State != want || r.Created || r.Verified == nil || !r.Verified.Equal || r.Verified.Source.Messages != 300 {
				t.Fatalf("second run: %+v, %v", r, err)
			}
		})
	}
}

// TestMoveRefusesRunningProjector: a cutover refuses while a client pulls
// from a durable consumer of the journal, and changes nothing.
func TestMoveRefusesRunningProjector(t *testing.T) {
	e := newEnv(t, journal.Config{})
	e.publish(t, "", "c", 5)
	cons, err := e.js.CreateConsumer(e.ctx, wire.JournalStream, jetstream.ConsumerConfig{
		Durable: wire.ConsumerName(wire.DefaultDurable, 0), FilterSubject: wire.ShardFilter(0), AckPolicy: jetstream.AckAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(jetstream.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cons.Info(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumWaiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pull never showed as waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r, err := move.Run(e.ctx, e.js, move.Config{To: "J2", Apply: true, Cutover: true})
	if !errors.Is(err, move.ErrProjectorRunning) || r.Retired {
		t.Fatalf("cutover under a projector: %+v, %v", r, err)
	}
	if subj := e.stream(t, wire.JournalStream).Config.Subjects; !slices.Equal(subj, wire.JournalSubjects()) {
		t.Errorf("journal subjects now %v", subj)
	}
}

// TestMoveRefusesOtherStream: a stream under the new name that is no copy
// of the journal is left alone.
func TestMoveRefusesOtherStream(t *testing.T) {
	e := newEnv(t, journal.Config{})
	if _, err := e.js.CreateStream(e.ctx, jetstream.StreamConfig{Name: "J2", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, apply := range []bool{false, true} {
		if _, err := move.Run(e.ctx, e.js, move.Config{To: "J2", Apply: apply}); !errors.Is(err, move.ErrTargetExists) {
			t.Errorf("apply %v: %v", apply, err)
		}
	}
	if _, err := move.Run(e.ctx, e.js, move.Config{To: wire.JournalStream}); err == nil {
		t.Error("a move onto itself was accepted")
	}
}

// TestMoveTwiceKeepsName: moving to a temporary name and back, deleting the
// old stream each time, gives a journal of the old name with the same
// messages and the new deny flags; writers of the old name go on.
func TestMoveTwiceKeepsName(t *testing.T) {
	e := newEnv(t, journal.Config{})
	e.publish(t, "", "c", 20)
	first, err := move.Run(e.ctx, e.js, move.Config{To: "TMP", AllowMsgDelete: true, Apply: true, Cutover: true, DeleteSource: true})
	if err != nil {
		t.Fatalf("move to TMP: %+v, %v", first, err)
	}
	back, err := move.Run(e.ctx, e.js, move.Config{From: "TMP", To: wire.JournalStream, AllowMsgDelete: true, Apply: true, Cutover: true, DeleteSource: true})
	if err != nil || back.State != move.StateMoved || !back.SourceDeleted || back.Verified.Target != first.Verified.Source {
		t.Fatalf("move back: %+v, %v", back, err)
	}
	if c := e.stream(t, wire.JournalStream).Config; c.DenyDelete || !c.DenyPurge {
		t.Errorf("JOURNAL config: %+v", c)
	}
	if next := e.publish(t, "", "after", 1); next[0] != 21 {
		t.Errorf("next command at %d, want 21", next[0])
	}
}
