package rebuild_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/wire"
)

// TestTableNameCase: table names are case-insensitive in every store, so
// the commands of one table, however they spell it, have one subject (one
// shard, one order), and the table verifies against its journal under
// either spelling. A journal written before, with a table's commands under
// its own spelling, still reads and verifies, with the commands published
// since on the lower-case subject.
func TestTableNameCase(t *testing.T) {
	for _, b := range replaytest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot))
			t.Run("spellings", func(t *testing.T) { caseSpellings(t, e) })
			t.Run("legacy", func(t *testing.T) { caseLegacy(t, e) })
		})
	}
}

// upsert is command i of a run on one row, guarded on the version the
// previous one made, so that a command applied out of order is rejected.
func upsert(table, prefix string, i int) *events.Command {
	op := events.RowOp{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int32(int32(i))}}
	if i > 0 {
		v := int64(i - 1)
		op.IfVersion = &v
	}
	return &events.Command{ID: fmt.Sprintf("%s-%d", prefix, i), Table: table, PK: "p", Ops: []events.RowOp{op}}
}

func caseSpellings(t *testing.T, e *replaytest.Env) {
	lower := strings.ToLower(replaytest.UniqueTable("caset"))
	spellings := []string{"caseT" + lower[5:], strings.ToUpper(lower), lower}
	var cmds []*events.Command
	var ids []string
	for i := range 30 {
		c := upsert(spellings[i%len(spellings)], "case-"+lower, i)
		cmds, ids = append(cmds, c), append(ids, c.ID)
	}
	e.Publish(cmds)
	for id, o := range e.Await(ids) {
		if o.Status != wire.StatusApplied {
			t.Fatalf("%s: %s %s (%s)", id, o.Status, o.Reason, o.Rule)
		}
	}
	subs := journalSubjects(t, e, wire.JournalPrefix+".*.*.*")
	var mine []string
	for s := range subs {
		if tok, _, _ := strings.Cut(strings.TrimPrefix(s, wire.JournalPrefix+"."), "."); strings.EqualFold(tok, lower) {
			mine = append(mine, s)
		}
	}
	if len(mine) != 1 || !strings.HasPrefix(mine[0], wire.JournalPrefix+"."+lower+".") {
		t.Fatalf("the table's commands are stored under %v, want one subject journal.%s.<shard>.<pk>", mine, lower)
	}
	row := replaytest.CurrentRows(t, e.Ctx, e.Store, spellings[1])
	if len(row) != 1 {
		t.Fatalf("rows of %s: %v", spellings[1], row)
	}
	for _, r := range row {
		if r.Version != 29 || r.Props["n"].Int != 29 {
			t.Fatalf("row: version %d, n %v; want 29, 29", r.Version, r.Props["n"])
		}
	}
	for _, table := range spellings {
		st, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: table})
		if err != nil || !st.Identical() || st.Rows == 0 {
			t.Fatalf("verify --table %s: %+v, %v", table, st, err)
		}
	}
	// Another spelling of the table is the table: a rebuild into it is
	// refused, even one resumed (which skips the emptiness check).
	if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: spellings[0], Into: spellings[1], Resume: true}); !errors.Is(err, rebuild.ErrIntoSource) {
		t.Fatalf("rebuild of %s into %s: %v, want ErrIntoSource", spellings[0], spellings[1], err)
	}
	// A snapshot of one spelling rebuilds the table named in another.
	var snap bytes.Buffer
	if _, err := e.Snap.Take(e.Ctx, &snap, snapshot.Config{Table: spellings[0]}); err != nil {
		t.Fatal(err)
	}
	into := replaytest.UniqueTable("Caseinto")
	if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: spellings[1], Into: into, Snapshot: bytes.NewReader(snap.Bytes())}); err != nil {
		t.Fatalf("rebuild of %s from a snapshot of %s: %v", spellings[1], spellings[0], err)
	}
	if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Into: spellings[2], Snapshot: bytes.NewReader(snap.Bytes())}); !errors.Is(err, rebuild.ErrIntoSource) && !errors.Is(err, replay.ErrNotEmpty) {
		t.Fatalf("rebuild of a snapshot of %s into %s: %v, want a refusal", spellings[0], spellings[2], err)
	}
}

func caseLegacy(t *testing.T, e *replaytest.Env) {
	table := replaytest.UniqueTable("Legacy")
	prefix := "legacy-" + table
	// As a writer did before: the table as spelled in the subject.
	var ids []string
	for i := range 3 {
		c := upsert(table, prefix, i)
		data, err := events.MarshalMsgpack(c)
		if err != nil {
			t.Fatal(err)
		}
		msg := nats.NewMsg(wire.JournalPrefix + "." + table + "." + wire.PKToken(c.PK))
		msg.Data = data
		msg.Header.Set(jetstream.MsgIDHeader, c.ID)
		if _, err := e.JS.PublishMsg(e.Ctx, msg); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	e.Await(ids)
	var cmds []*events.Command
	for i := 3; i < 6; i++ {
		c := upsert(table, prefix, i)
		cmds, ids = append(cmds, c), append(ids, c.ID)
	}
	e.Publish(cmds)
	for id, o := range e.Await(ids) {
		if o.Status != wire.StatusApplied {
			t.Fatalf("%s: %s %s (%s)", id, o.Status, o.Reason, o.Rule)
		}
	}
	if subs := journalSubjects(t, e, wire.JournalPrefix+"."+table+".*.*"); len(subs) != 1 {
		t.Fatalf("legacy subjects %v, want one", subs)
	}
	// Replay reads the lower-case subject and the spelling it is given:
	// the one the journal written before holds.
	st, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: table})
	if err != nil || !st.Identical() || st.Rebuild.Commands != 6 {
		t.Fatalf("verify --table %s: %+v, %v", table, st, err)
	}
	// A partition rebuilt in place reads both subjects too (nothing is
	// published to it meanwhile, as RebuildPartition asks).
	ps, err := e.Rebuild.RebuildPartition(e.Ctx, table, "p")
	if err != nil || ps.Commands != 6 || ps.Applied != 6 {
		t.Fatalf("rebuild --table %s --pk p: %+v, %v", table, ps, err)
	}
	if st, err = e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: table}); err != nil || !st.Identical() {
		t.Fatalf("verify --table %s after the partition's rebuild: %+v, %v", table, st, err)
	}
}

func journalSubjects(t *testing.T, e *replaytest.Env, filter string) map[string]uint64 {
	t.Helper()
	s, err := e.JS.Stream(e.Ctx, e.Journal.Name())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.Ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}
