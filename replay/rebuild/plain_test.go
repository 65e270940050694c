package rebuild_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestRebuildPlain projects a seeded workload into a plain table (SPEC §4),
// rebuilds it into a new table and finds both the history and the table
// itself equal to the live ones, row for row; verify finds nothing, then
// finds each row of the table itself that was written outside the
// journal.
func TestRebuildPlain(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			n, pks, rks := 300, []string{"p0", "p1", "p2"}, []string{"r0", "r0:x", "r1", "a%b", "r2"}
			if b.Small {
				n = 120
			}
			rng := rand.New(rand.NewPCG(38, uint64(len(b.Name))))
			st := b.Open(t)
			e := replaytest.NewEnv(t, st, replaytest.With(replaytest.Rebuild))
			s := e.SeedIn(wire.LayoutPlain, rng, n, pks, rks)
			hist := projectiontest.VersionTable(t, s.Table, wire.LayoutPlain)
			projectiontest.CheckPlain(t, st, s.Table)
			if len(replaytest.AllRows(t, e.Ctx, st, s.Table)) == 0 {
				t.Fatal("the plain table holds no row")
			}

			into := replaytest.UniqueTable("Into")
			rs, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: into})
			if err != nil {
				t.Fatal(err)
			}
			if rs.Layout != wire.LayoutPlain {
				t.Fatalf("rebuilt in layout %q, want the source's, plain", rs.Layout)
			}
			replaytest.SameTables(t, "rebuilt plain table", replaytest.AllRows(t, e.Ctx, st, into), replaytest.AllRows(t, e.Ctx, st, s.Table))
			replaytest.SameTables(t, "rebuilt history", replaytest.AllRows(t, e.Ctx, st, projectiontest.VersionTable(t, into, wire.LayoutPlain)),
				replaytest.AllRows(t, e.Ctx, st, hist))
			if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: hist}); err == nil {
				t.Fatal("a rebuild into the source's history table succeeded")
			}

			vs, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: s.Table, Seq: s.Head})
			if err != nil || !vs.Identical() {
				t.Fatalf("verify of the untouched plain table: %+v, %v", vs, err)
			}

			// Written outside the journal: one row changed, one deleted,
			// one added, in the table itself only.
			projectiontest.SkipLayoutCheck(t, s.Table)
			cur := replaytest.AllRows(t, e.Ctx, st, s.Table)
			var keys []replaytest.Key
			for k := range cur {
				keys = append(keys, k)
			}
			if len(keys) < 2 {
				t.Fatalf("only %d current rows", len(keys))
			}
			changed := cur[keys[0]].Clone()
			changed["tampered"] = edm.Bool(true)
			ops := map[string][]store.Op{}
			ops[keys[0].PK] = append(ops[keys[0].PK], store.Op{Kind: store.Replace, RK: keys[0].RK, Props: changed})
			ops[keys[1].PK] = append(ops[keys[1].PK], store.Op{Kind: store.Delete, RK: keys[1].RK})
			ops["p9"] = append(ops["p9"], store.Op{Kind: store.Insert, RK: "foreign", Props: edm.Entity{"x": edm.Int64(1)}})
			for pk, o := range ops {
				if _, err := st.Transact(e.Ctx, s.Table, pk, o); err != nil {
					t.Fatal(err)
				}
			}
			var plainDiffs []rebuild.Difference
			vs, err = e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: s.Table, Seq: s.Head, OnDiff: func(d rebuild.Difference) error {
				if d.Plain {
					plainDiffs = append(plainDiffs, d)
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if vs.Changed != 1 || vs.Missing != 1 || vs.Extra != 1 || len(plainDiffs) != 3 {
				t.Fatalf("verify after tampering: %+v, plain differences %+v; want one changed, one missing, one extra, all in the plain table", vs, plainDiffs)
			}
		})
	}
}
