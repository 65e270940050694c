package rebuild_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestReplayPlain runs the replay tools on a plain table (SPEC §4) against
// the model, as TestReplay does on a versioned one: as-of, history, blame,
// undo and restore read the history table, and what undo and restore
// publish leaves the table itself equal to the history's tips; a snapshot
// carries the layout, and its load is a plain copy that diff and verify
// find identical.
func TestReplayPlain(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			n, pks, rks := 300, []string{"p0", "p1", "p2"}, []string{"r0", "r0:x", "r1", "a%b", "r2"}
			if b.Small {
				n = 120
			}
			rng := rand.New(rand.NewPCG(381, uint64(len(b.Name))))
			st := b.Open(t)
			e := replaytest.NewEnv(t, st, replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot))
			s := e.SeedIn(wire.LayoutPlain, rng, n, pks, rks)
			if l, err := e.Src.Layout(e.Ctx, s.Table); err != nil || l != wire.LayoutPlain {
				t.Fatalf("layout of the seeded table: %q, %v", l, err)
			}
			t.Run("asof", func(t *testing.T) { testAsOf(t, e, s, rng, true) })
			t.Run("history", func(t *testing.T) { testHistory(t, e, s) })
			t.Run("blame", func(t *testing.T) { testBlame(t, e, s) })
			t.Run("snapshot", func(t *testing.T) { testSnapshotPlain(t, e, s) })
			t.Run("undo", func(t *testing.T) {
				testUndo(t, e, s)
				projectiontest.CheckPlain(t, st, s.Table)
			})
			t.Run("restore", func(t *testing.T) {
				testRestore(t, e, s, rng)
				projectiontest.CheckPlain(t, st, s.Table)
			})
			t.Run("verify", func(t *testing.T) {
				vs, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: s.Table})
				if err != nil || !vs.Identical() {
					t.Fatalf("verify after undo and restore: %+v, %v", vs, err)
				}
			})
		})
	}
}

// testSnapshotPlain takes a snapshot of a plain table, loads it and finds
// the copy plain, its history equal to the original's and the copy itself
// equal to the table, row for row; diff says identical, and says so no
// longer once the copy's own table is written outside the journal.
func testSnapshotPlain(t *testing.T, e *replaytest.Env, s *replaytest.Seeded) {
	var buf bytes.Buffer
	st, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: s.Table})
	if err != nil {
		t.Fatal(err)
	}
	if st.Header.Layout != wire.LayoutPlain || st.Entities == 0 {
		t.Fatalf("snapshot of a plain table: %+v", st)
	}
	into := replaytest.UniqueTable("Loaded")
	ls, err := e.Snap.Load(e.Ctx, bytes.NewReader(buf.Bytes()), snapshot.LoadConfig{Into: into})
	if err != nil {
		t.Fatal(err)
	}
	if ls.Header != st.Header {
		t.Fatalf("load %+v of snapshot %+v", ls, st)
	}
	if l, err := e.Src.Layout(e.Ctx, into); err != nil || l != wire.LayoutPlain {
		t.Fatalf("layout of the loaded copy: %q, %v", l, err)
	}
	hist := projectiontest.VersionTable(t, s.Table, wire.LayoutPlain)
	intoHist := projectiontest.VersionTable(t, into, wire.LayoutPlain)
	replaytest.SameTables(t, "loaded history", replaytest.AllRows(t, e.Ctx, e.Store, intoHist), replaytest.AllRows(t, e.Ctx, e.Store, hist))
	replaytest.SameTables(t, "loaded plain table", replaytest.AllRows(t, e.Ctx, e.Store, into), replaytest.AllRows(t, e.Ctx, e.Store, s.Table))
	projectiontest.CheckPlain(t, e.Store, into)

	ds, err := e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: s.Table, Against: into})
	if err != nil || !ds.Identical() || ds.Rows == 0 {
		t.Fatalf("diff of a plain table and its loaded copy: %+v, %v", ds, err)
	}
	// A snapshot of the copy (no commands of its own) is the same.
	var again bytes.Buffer
	st2, err := e.Snap.Take(e.Ctx, &again, snapshot.Config{Table: into, Seq: st.Header.Seq})
	if err != nil || st2.Entities != st.Entities || st2.Header.Layout != wire.LayoutPlain {
		t.Fatalf("snapshot of the loaded copy: %+v, %v; the original %+v", st2, err, st)
	}

	// The copy's own table changed outside the journal: its history is
	// still equal, the table is not, and diff says where.
	projectiontest.SkipLayoutCheck(t, into)
	cur := replaytest.AllRows(t, e.Ctx, e.Store, into)
	var k replaytest.Key
	for k = range cur {
		break
	}
	changed := cur[k].Clone()
	changed["tampered"] = edm.Bool(true)
	if _, err := e.Store.Transact(e.Ctx, into, k.PK, []store.Op{{Kind: store.Replace, RK: k.RK, Props: changed}}); err != nil {
		t.Fatal(err)
	}
	var diffs []rebuild.Difference
	ds, err = e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: s.Table, Against: into, OnDiff: func(d rebuild.Difference) error {
		diffs = append(diffs, d)
		return nil
	}})
	if err != nil || ds.Changed != 1 || len(diffs) != 1 || !diffs[0].Plain || diffs[0].Key != k.RK {
		t.Fatalf("diff after the copy's row %v changed: %+v %+v, %v", k, ds, diffs, err)
	}
}
