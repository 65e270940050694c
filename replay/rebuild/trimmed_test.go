package rebuild_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
)

// TestRebuildRefusesTrimmedJournal: once the journal's first commands are
// gone, a rebuild from the start is refused instead of silently
// re-projecting only what is left.
func TestRebuildRefusesTrimmedJournal(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Backends()[0].Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot), replaytest.WithJournal(journal.Config{AllowTrim: true}))
	table := replaytest.UniqueTable("Trim")
	var cmds []*events.Command
	var ids []string
	for i := range 4 {
		id := fmt.Sprintf("trim-%d", i)
		cmds = append(cmds, &events.Command{ID: id, Table: table, PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int32(int32(i))}}}})
		ids = append(ids, id)
	}
	seqs := e.Publish(cmds)
	e.Await(ids)
	s, err := e.JS.Stream(e.Ctx, e.Journal.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(e.Ctx, jetstream.WithPurgeSequence(seqs[2])); err != nil { // keeps seqs[2] on
		t.Fatal(err)
	}
	_, err = e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: table, Into: replaytest.UniqueTable("Trimmed")})
	if !errors.Is(err, replay.ErrBadPoint) {
		t.Fatalf("rebuild of a trimmed journal: %v, want ErrBadPoint", err)
	}
	t.Log(err)
}
