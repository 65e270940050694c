package snapshot_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/store"
)

// A snapshot at a sequence beyond the journal's head is refused, as asof
// refuses it: a rebuild from it would skip every command up to it. A
// rebuild of a table the journal has never seen is refused and creates
// nothing.
func TestRefusedPoints(t *testing.T) {
	for _, b := range replaytest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel() // each backend its own pipeline
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Rebuild|replaytest.Snapshot))
			table := replaytest.UniqueTable("Refuse")
			seqs := e.Publish([]*events.Command{{ID: "rf1", Table: table, PK: "p",
				Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{}}}}})
			e.Await([]string{"rf1"})
			head := seqs[0]

			var buf bytes.Buffer
			_, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: table, Seq: head + 1})
			if !errors.Is(err, replay.ErrBadPoint) {
				t.Fatalf("snapshot beyond the head: %v, want ErrBadPoint", err)
			}
			if _, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: table, Seq: head}); err != nil {
				t.Fatalf("snapshot at the head: %v", err)
			}

			into := replaytest.UniqueTable("Refuseinto")
			// (strings.ToUpper(table) is table itself: names are case-insensitive.)
			never := replaytest.UniqueTable("Never")
			if _, err = e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: never, Into: into}); !errors.Is(err, rebuild.ErrUnknownTable) {
				t.Fatalf("rebuild of %s, never in the journal: %v, want ErrUnknownTable", never, err)
			}
			if _, err := e.Store.Query(e.Ctx, into, store.Query{AllPartitions: true, Limit: 1}); !errors.Is(err, store.ErrTableNotFound) {
				t.Fatalf("the refused rebuild left table %s: %v", into, err)
			}
		})
	}
}

// TestLoadWithoutJournal: a load that cannot read the erasures after the
// snapshot (no journal) is refused unless told to skip the check, and then
// loads (issue 28, item 6).
func TestLoadWithoutJournal(t *testing.T) {
	b := replaytest.Stores()[0]
	e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Rebuild|replaytest.Snapshot))
	table := replaytest.UniqueTable("Nojournal")
	e.Publish([]*events.Command{{ID: "nj1", Table: table, PK: "p",
		Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{}}}}})
	e.Await([]string{"nj1"})
	var buf bytes.Buffer
	if _, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: table}); err != nil {
		t.Fatal(err)
	}
	src, err := replay.New(e.Ctx, replay.Config{Store: e.Store, Logger: replaytest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	into := replaytest.UniqueTable("Nojournalinto")
	_, err = snapshot.New(src).Load(e.Ctx, bytes.NewReader(buf.Bytes()), snapshot.LoadConfig{Into: into})
	if !errors.Is(err, snapshot.ErrErasureUnchecked) {
		t.Fatalf("load without a journal: %v, want ErrErasureUnchecked", err)
	}
	if _, err := e.Store.Query(e.Ctx, into, store.Query{AllPartitions: true, Limit: 1}); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("the refused load left table %s: %v", into, err)
	}
	st, err := snapshot.New(src).Load(e.Ctx, bytes.NewReader(buf.Bytes()), snapshot.LoadConfig{Into: into, SkipErasureCheck: true})
	if err != nil || st.Entities == 0 {
		t.Fatalf("load told to skip the check: %+v %v", st, err)
	}
}
