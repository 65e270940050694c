package move

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestResumeAfterMirrorEnded: a cutover killed after it ended the mirror
// and published a filler, before it purged the fillers and gave the copy
// the journal's configuration, is finished by a run again: the copy is not
// taken for a finished move, the old journal is not given its subjects
// back, and no filler is left.
func TestResumeAfterMirrorEnded(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	if _, err := journal.Ensure(ctx, js, journal.Config{AllowMsgDelete: true}); err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter(js, "")
	for i := range 6 {
		if _, err := w.Publish(ctx, &events.Command{ID: fmt.Sprint("c", i), Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int64(int64(i))}}}}); err != nil {
			t.Fatal(err)
		}
	}
	src, err := js.Stream(ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{5, 6} {
		if err := src.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{To: "J2", Apply: true, Cutover: true}
	if _, err := Run(ctx, js, Config{To: "J2", Apply: true}); err != nil {
		t.Fatal(err)
	}

	// The cutover's steps up to the kill.
	cfg.setDefaults()
	m := &mover{js: js, cfg: cfg}
	if _, err := m.openTarget(ctx); err != nil {
		t.Fatal(err)
	}
	m.src = src
	if err := m.readSource(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.retireSource(ctx); err != nil {
		t.Fatal(err)
	}
	c := m.tgt.CachedInfo().Config
	c.Mirror, c.Subjects, c.Duplicates = nil, []string{fillerSubject("J2")}, 0
	if _, err := js.UpdateStream(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: fillerSubject("J2")}, jetstream.WithExpectLastSequence(4)); err != nil {
		t.Fatal(err)
	}

	r, err := Run(ctx, js, cfg)
	if err != nil || r.State != StateMoved || r.Verified == nil || !r.Verified.Equal {
		t.Fatalf("run again: %+v, %v", r, err)
	}
	dst, err := js.Stream(ctx, "J2")
	if err != nil {
		t.Fatal(err)
	}
	info, err := dst.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 4 || info.State.LastSeq != 6 || info.Config.Subjects[0] != wire.JournalPrefix+".*.*" {
		t.Errorf("J2: %+v, subjects %v", info.State, info.Config.Subjects)
	}
	si, err := src.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.Config.Subjects[0] != retiredSubject(wire.JournalStream) {
		t.Errorf("old journal subjects %v", si.Config.Subjects)
	}
}
