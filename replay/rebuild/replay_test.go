package rebuild_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// TestReplay runs every replay operation against a real projector over a
// seeded workload, on each table backend, and checks it against the
// model.
func TestReplay(t *testing.T) {
	for _, b := range replaytest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			n, pks, rks := 400, []string{"p0", "p1", "p2", "p3"}, []string{"r0", "r0:x", "r1", "a%b", "r2", "r3"}
			if b.Small {
				n, pks, rks = 150, pks[:2], rks[:5]
			}
			if b.Paged {
				n /= 2 // the same paths, fewer round trips
			}
			rng := rand.New(rand.NewPCG(42, uint64(len(b.Name))))
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot))
			s := e.Seed(rng, n, pks, rks)
			t.Run("asof", func(t *testing.T) { testAsOf(t, e, s, rng, b.Small) })
			t.Run("history", func(t *testing.T) { testHistory(t, e, s) })
			t.Run("blame", func(t *testing.T) { testBlame(t, e, s) })
			t.Run("rebuild", func(t *testing.T) { testRebuild(t, e, s, rng) })
			t.Run("snapshot", func(t *testing.T) { testSnapshot(t, e, s, b.Paged) })
			t.Run("undo", func(t *testing.T) { testUndo(t, e, s) })
			t.Run("restore", func(t *testing.T) { testRestore(t, e, s, rng) })
			t.Run("applied", func(t *testing.T) { testApplied(t, e, s) })
			t.Run("verify", func(t *testing.T) { testVerify(t, e, s) })
		})
	}
}

// points returns n journal points: the start, the head by sequence and as
// Head, then sequences, command IDs and times in turn, with the sequence
// each must resolve to.
func points(s *replaytest.Seeded, rng *rand.Rand, n int) ([]replay.Point, []uint64) {
	var ps []replay.Point
	var want []uint64
	ps = append(ps, replay.Seq(0), replay.Seq(s.Head), replay.Head())
	want = append(want, 0, s.Head, s.Head)
	for len(ps) < n {
		i := rng.IntN(len(s.Cmds))
		seq := s.Seqs[i]
		switch len(ps) % 3 {
		case 0:
			ps, want = append(ps, replay.Seq(seq)), append(want, seq)
		case 1:
			ps, want = append(ps, replay.Cmd(s.Cmds[i].ID)), append(want, seq)
		default:
			// A time between two commands, or exactly one's.
			at := s.Times[seq]
			if rng.IntN(2) == 0 {
				at = at.Add(-time.Duration(rng.IntN(int(time.Millisecond))))
			}
			var w uint64
			for q, t := range s.Times {
				if !t.After(at) && q > w {
					w = q
				}
			}
			ps, want = append(ps, replay.Time(at)), append(want, w)
		}
	}
	return ps, want
}

// testAsOf resolves 18 points (the start, the head twice, then five each
// of a sequence, a command ID and a time; it was 54 with the kind drawn at
// random: three times the reads, the same paths) and reads every row, every
// partition and the table at each. On Azurite (small), whose every read is
// a round trip to another process that a loaded machine starves, 9 points:
// two of each kind.
func testAsOf(t *testing.T, e *replaytest.Env, s *replaytest.Seeded, rng *rand.Rand, small bool) {
	n := 18
	if small {
		n = 9
	}
	ps, want := points(s, rng, n)
	pks := map[string]bool{}
	for _, k := range s.Model.Keys() {
		pks[k.PK] = true
	}
	for i, p := range ps {
		seq, err := e.Src.Resolve(e.Ctx, p)
		if err != nil {
			t.Fatalf("resolve %s: %v", p, err)
		}
		if seq != want[i] {
			t.Fatalf("resolve %s = %d, want %d", p, seq, want[i])
		}
		// Every row.
		for _, k := range s.Model.Keys() {
			got, ok, err := e.Hist.AsOfRow(e.Ctx, s.Table, k.PK, k.RK, seq)
			if err != nil {
				t.Fatal(err)
			}
			w, wok := s.Model.AtKey(k, seq)
			if ok != wok {
				t.Fatalf("asof %q/%q at %d (%s): exists=%v, model %v", k.PK, k.RK, seq, p, ok, wok)
			}
			if w.Cmd != "" { // live or tombstone: both are returned
				if err := replaytest.SameRow(got, w); err != nil {
					t.Fatalf("asof %q/%q at %d: %v", k.PK, k.RK, seq, err)
				}
			}
		}
		// Each partition and the table.
		for pk := range pks {
			checkScan(t, s, replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.InPartition(pk), seq), store.InPartition(pk), seq)
		}
		checkScan(t, s, replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, seq), store.AllPartitions, seq)
	}
	// Beyond the head is no point.
	if _, err := e.Src.Resolve(e.Ctx, replay.Seq(s.Head+1000)); !errors.Is(err, replay.ErrBadPoint) {
		t.Errorf("resolve beyond head: %v, want ErrBadPoint", err)
	}
	if _, err := e.Src.Resolve(e.Ctx, replay.Cmd("never-published")); !errors.Is(err, replay.ErrNoOutcome) {
		t.Errorf("resolve unknown command: %v, want ErrNoOutcome", err)
	}
}

func checkScan(t *testing.T, s *replaytest.Seeded, got map[replaytest.Key]rows.Row, part store.Partition, seq uint64) {
	t.Helper()
	want := s.Model.StateAtKey(part, seq)
	if len(got) != len(want) {
		t.Fatalf("asof %s at %d: %d rows, model %d", part, seq, len(got), len(want))
	}
	for k, w := range want {
		if err := replaytest.SameRow(got[k], w); err != nil {
			t.Fatalf("asof %s at %d, row %q: %v", part, seq, k.RK, err)
		}
	}
}

func testHistory(t *testing.T, e *replaytest.Env, s *replaytest.Seeded) {
	for _, k := range s.Model.Keys() {
		rows, err := e.Hist.History(e.Ctx, s.Table, k.PK, k.RK)
		if err != nil {
			t.Fatal(err)
		}
		want := s.Model.History(k)
		if len(rows) != len(want) {
			t.Fatalf("history %q/%q: %d versions, model %d", k.PK, k.RK, len(rows), len(want))
		}
		for i := range rows {
			if err := replaytest.SameRow(rows[i], want[i]); err != nil {
				t.Fatalf("history %q/%q v%d: %v", k.PK, k.RK, i, err)
			}
			if rows[i].Tip != (i == len(rows)-1 && !want[i].Deleted) {
				t.Fatalf("history %q/%q v%d: tip %v", k.PK, k.RK, i, rows[i].Tip)
			}
		}
	}
	d := history.Diff(edm.Entity{"a": edm.Int32(1), "b": edm.String("x")}, edm.Entity{"a": edm.Int64(1), "c": edm.Bool(true)})
	if len(d) != 3 || d[0].Name != "a" || !d[0].HadBefore || !d[0].HasNow || d[1].Name != "b" || d[1].HasNow || d[2].Name != "c" || d[2].HadBefore {
		t.Fatalf("Diff: %+v", d)
	}
}

func testBlame(t *testing.T, e *replaytest.Env, s *replaytest.Seeded) {
	for i, c := range s.Cmds {
		if i%7 != 0 || c.Table != s.Table {
			continue
		}
		b, err := e.Hist.Blame(e.Ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		o := s.Outcomes[c.ID]
		if b.Outcome.Status != o.Status || b.Outcome.Seq != s.Seqs[i] || b.Command == nil || b.Command.ID != c.ID || !strings.HasPrefix(b.Subject, "journal."+strings.ToLower(s.Table)+".") {
			t.Fatalf("blame %s: %+v, outcome %+v", c.ID, b, o)
		}
		if o.Status != wire.StatusApplied {
			if len(b.Versions) != 0 {
				t.Fatalf("blame of rejected %s lists versions", c.ID)
			}
			continue
		}
		if len(b.Versions) != len(o.Rows) {
			t.Fatalf("blame %s: %d versions, outcome has %d", c.ID, len(b.Versions), len(o.Rows))
		}
		want := make(map[string]bool)
		for _, rv := range o.Rows {
			want[fmt.Sprintf("%s@%d", rv.RK, rv.Version)] = true
		}
		for _, v := range b.Versions {
			w := s.Model.History(replaytest.Key{PK: c.PK, RK: v.RK})[v.Version]
			if v.Seq != s.Seqs[i] || v.Cmd != c.ID || !want[fmt.Sprintf("%s@%d", v.RK, v.Version)] {
				t.Fatalf("blame %s: version %+v, outcome rows %+v", c.ID, v, o.Rows)
			}
			if err := replaytest.SameRow(v, w); err != nil {
				t.Fatalf("blame %s, %q v%d: %v", c.ID, v.RK, v.Version, err)
			}
		}
	}
}

func testRebuild(t *testing.T, e *replaytest.Env, s *replaytest.Seeded, rng *rand.Rand) {
	live := replaytest.AllRows(t, e.Ctx, e.Store, s.Table)
	for i, to := range []uint64{s.Head / 3, s.Head * 2 / 3, s.Seqs[rng.IntN(len(s.Seqs))], 0} {
		into := replaytest.UniqueTable("Rebuilt")
		var calls int
		st, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: into, To: to, Workers: 1 + i,
			Progress: func(done, total int64) { calls++ }})
		if err != nil {
			t.Fatal(err)
		}
		if calls == 0 || st.Commands == 0 || st.Applied == 0 || st.Rejected == 0 {
			t.Fatalf("rebuild to %d: %+v, %d progress calls", to, st, calls)
		}
		if to == 0 {
			// To the head: the whole table, versions and tombstones included.
			replaytest.SameTables(t, "rebuild to head", replaytest.AllRows(t, e.Ctx, e.Store, into), live)
			continue
		}
		replaytest.SameState(t, fmt.Sprintf("rebuild to %d", to), replaytest.CurrentRows(t, e.Ctx, e.Store, into), replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, to))
	}
	// Into a table that holds rows: refused.
	_, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: s.Other})
	if !errors.Is(err, replay.ErrNotEmpty) {
		t.Fatalf("rebuild into a full table: %v", err)
	}
}

func testSnapshot(t *testing.T, e *replaytest.Env, s *replaytest.Seeded, paged bool) {
	// Default: the sequence the projector has applied, the head by now.
	// Partitions are read in parallel, through every wrapper too (the
	// store lists them).
	var buf bytes.Buffer
	st, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: s.Table})
	if err != nil {
		t.Fatal(err)
	}
	if st.Header.Seq != s.Head || st.Entities == 0 || st.Partitions == 0 {
		t.Fatalf("snapshot: %+v, head %d", st, s.Head)
	}
	into := replaytest.UniqueTable("Loaded")
	ls, err := e.Snap.Load(e.Ctx, bytes.NewReader(buf.Bytes()), snapshot.LoadConfig{Into: into})
	if err != nil {
		t.Fatal(err)
	}
	if ls.Entities != st.Entities || ls.Header != st.Header {
		t.Fatalf("load %+v of snapshot %+v", ls, st)
	}
	live := replaytest.AllRows(t, e.Ctx, e.Store, s.Table)
	replaytest.SameTables(t, "load of a snapshot at the head", replaytest.AllRows(t, e.Ctx, e.Store, into), live)

	// The loaded table has no commands in the journal: its snapshot reads
	// the table itself and holds every row.
	var again bytes.Buffer
	st2, err := e.Snap.Take(e.Ctx, &again, snapshot.Config{Table: into, Seq: s.Head})
	if err != nil {
		t.Fatal(err)
	}
	if st2.Entities != st.Entities {
		t.Fatalf("snapshot of the loaded table: %d entities, the original %d", st2.Entities, st.Entities)
	}

	// At an earlier sequence, while the table holds later rows: equal to
	// a rebuild to that sequence; then the journal tail gives the live table.
	mid := s.Head / 2
	buf.Reset()
	if st, err = e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: s.Table, Seq: mid, Workers: 3}); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()
	rebuilt := replaytest.UniqueTable("Rebuilt")
	if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: rebuilt, To: mid}); err != nil {
		t.Fatal(err)
	}
	into = replaytest.UniqueTable("Loaded")
	if _, err := e.Snap.Load(e.Ctx, bytes.NewReader(snap), snapshot.LoadConfig{Into: into}); err != nil {
		t.Fatal(err)
	}
	replaytest.SameTables(t, "snapshot at mid vs rebuild to mid", replaytest.AllRows(t, e.Ctx, e.Store, into), replaytest.AllRows(t, e.Ctx, e.Store, rebuilt))

	tail := replaytest.UniqueTable("Tail")
	rs, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Into: tail, Snapshot: bytes.NewReader(snap)})
	if err != nil {
		t.Fatal(err)
	}
	if rs.From != mid+1 || rs.Table != s.Table || rs.Loaded != st.Entities {
		t.Fatalf("rebuild from snapshot: %+v", rs)
	}
	replaytest.SameTables(t, "snapshot + journal tail", replaytest.AllRows(t, e.Ctx, e.Store, tail), live)

	// Damaged files are refused.
	for name, bad := range map[string][]byte{
		"truncated": snap[:len(snap)*2/3],
		"no magic":  snap[3:],
		"empty":     nil,
	} {
		_, err := e.Snap.Load(e.Ctx, bytes.NewReader(bad), snapshot.LoadConfig{Into: replaytest.UniqueTable("Bad")})
		if !errors.Is(err, snapshot.ErrBadSnapshot) {
			t.Errorf("load %s snapshot: %v, want ErrBadSnapshot", name, err)
		}
	}
}

// applyPlan applies p, checks every command applied, and feeds the
// commands to the model.
func applyPlan(t *testing.T, e *replaytest.Env, s *replaytest.Seeded, p *repair.Plan) {
	t.Helper()
	res, err := p.Apply(e.Ctx)
	if err != nil {
		t.Fatalf("apply %s: %v", p.Kind, err)
	}
	for i, a := range res.Published {
		if a.Outcome.Status != wire.StatusApplied {
			t.Fatalf("%s: %s (%s)", a.ID, a.Outcome.Status, a.Outcome.Reason)
		}
		if !a.Duplicate {
			if !s.Model.ApplyOK(a.Outcome.Seq, p.Commands[i]) {
				t.Fatalf("%s applied, but not in the model", a.ID)
			}
			s.Times[a.Outcome.Seq] = a.Outcome.At
			s.Head = max(s.Head, a.Outcome.Seq)
		}
	}
}

// untouched finds an applied command whose rows no later command changed,
// and one whose rows later commands did change.
func untouched(s *replaytest.Seeded) (clean, changed string) {
	for i := len(s.Cmds) - 1; i >= 0; i-- {
		c := s.Cmds[i]
		o := s.Outcomes[c.ID]
		if c.Table != s.Table || o.Status != wire.StatusApplied {
			continue
		}
		isClean := true
		for _, rv := range o.Rows {
			if s.Model.Latest(replaytest.Key{PK: c.PK, RK: rv.RK}).Cmd != c.ID {
				isClean = false
			}
		}
		switch {
		case isClean && clean == "" && len(o.Rows) > 1:
			clean = c.ID
		case !isClean && changed == "" && i < len(s.Cmds)/2:
			changed = c.ID
		}
	}
	return clean, changed
}

func testUndo(t *testing.T, e *replaytest.Env, s *replaytest.Seeded) {
	clean, changed := untouched(s)
	if clean == "" || changed == "" {
		t.Fatalf("replaytest.Workload has no command to undo: %q %q", clean, changed)
	}
	o := s.Outcomes[clean]
	var c *events.Command
	for _, x := range s.Cmds {
		if x.ID == clean {
			c = x
		}
	}
	before := make(map[string]int)
	for _, rv := range o.Rows {
		rows, _ := e.Hist.History(e.Ctx, s.Table, c.PK, rv.RK)
		before[rv.RK] = len(rows)
	}

	p, err := e.Repair.PlanUndo(e.Ctx, clean, repair.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts()) != 0 || len(p.Commands) != 1 || p.Commands[0].ID != "undo-"+clean+"-0" || p.Commands[0].Meta[repair.MetaUndoOf] != clean {
		t.Fatalf("undo plan of untouched %s: %+v", clean, p)
	}
	applyPlan(t, e, s, p)
	// Each row is back to the version before, as a new version; history kept.
	for _, rk := range rowsOf(o) {
		k := replaytest.Key{PK: c.PK, RK: rk}
		got, ok, err := e.Hist.AsOfRow(e.Ctx, s.Table, c.PK, rk, s.Head)
		if err != nil {
			t.Fatal(err)
		}
		want, wok := s.Model.AtKey(k, o.Seq-1)
		if ok != wok || ok && !got.Props.Equal(want.Props) {
			t.Fatalf("after undo of %s, %q: %v %#v, want %v %#v", clean, rk, ok, got.Props, wok, want.Props)
		}
		rows, _ := e.Hist.History(e.Ctx, s.Table, c.PK, rk)
		if len(rows) != before[rk]+1 {
			t.Fatalf("after undo, %q has %d versions, had %d", rk, len(rows), before[rk])
		}
	}
	// Applying the same plan again is refused: the rows it was made on
	// changed (by the undo itself), and the plan made now has nothing to
	// do.
	head, _ := e.Journal.Head(e.Ctx)
	if _, err := p.Apply(e.Ctx); !errors.Is(err, replay.ErrStale) {
		t.Fatalf("re-apply: %v, want ErrStale", err)
	}
	if h, _ := e.Journal.Head(e.Ctx); h != head {
		t.Fatalf("re-apply published: head %d -> %d", head, h)
	}
	if again, err := e.Repair.PlanUndo(e.Ctx, clean, repair.UndoOptions{}); err != nil || len(again.Commands) != 0 {
		t.Fatalf("undo planned again after it applied: %+v %v", again, err)
	}

	// Undoing the undo returns to the state before it.
	stateBefore := replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.InPartition(c.PK), o.Seq)
	uu, err := e.Repair.PlanUndo(e.Ctx, "undo-"+clean+"-0", repair.UndoOptions{})
	if err != nil || len(uu.Conflicts()) != 0 || len(uu.Commands) != 1 {
		t.Fatalf("undo of undo: %+v %v", uu, err)
	}
	applyPlan(t, e, s, uu)
	after := replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.InPartition(c.PK), s.Head)
	for _, rk := range rowsOf(o) {
		k := replaytest.Key{PK: c.PK, RK: rk}
		if _, ok := stateBefore[k]; ok != (after[k].Cmd != "") || !after[k].Props.Equal(stateBefore[k].Props) {
			t.Fatalf("undo of undo, %q: %#v, want %#v", rk, after[k].Props, stateBefore[k].Props)
		}
	}

	// A command whose rows changed later: conflicts, nothing published
	// without Force.
	co := s.Outcomes[changed]
	p, err = e.Repair.PlanUndo(e.Ctx, changed, repair.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts()) == 0 || !p.Blocked() {
		t.Fatalf("undo of changed %s: no conflicts: %+v", changed, p)
	}
	for _, st := range p.Conflicts() {
		if st.Undone == nil || st.Current.Cmd == changed {
			t.Fatalf("conflict without the values involved: %+v", st)
		}
	}
	head, _ = e.Journal.Head(e.Ctx)
	if _, err := p.Apply(e.Ctx); !errors.Is(err, repair.ErrConflicts) {
		t.Fatalf("apply with conflicts: %v, want ErrConflicts", err)
	}
	if h, _ := e.Journal.Head(e.Ctx); h != head {
		t.Fatalf("apply with conflicts published: head %d -> %d", head, h)
	}
	// Forced: every row goes back to its version before the command.
	p, err = e.Repair.PlanUndo(e.Ctx, changed, repair.UndoOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Commands) == 0 {
		t.Skipf("forced undo of %s has nothing to change", changed)
	}
	applyPlan(t, e, s, p)
	for _, rk := range rowsOf(co) {
		k := replaytest.Key{PK: co.PK, RK: rk}
		got, ok, _ := e.Hist.AsOfRow(e.Ctx, s.Table, co.PK, rk, s.Head)
		want, wok := s.Model.AtKey(k, co.Seq-1)
		if ok != wok || ok && !got.Props.Equal(want.Props) {
			t.Fatalf("forced undo of %s, %q: %v %#v, want %v %#v", changed, rk, ok, got.Props, wok, want.Props)
		}
	}
	// A rejected command has nothing to undo.
	for _, c := range s.Cmds {
		if s.Outcomes[c.ID].Status == wire.StatusRejected {
			p, err := e.Repair.PlanUndo(e.Ctx, c.ID, repair.UndoOptions{})
			if err != nil || len(p.Steps) != 0 || p.Status != wire.StatusRejected {
				t.Fatalf("undo of rejected %s: %+v %v", c.ID, p, err)
			}
			break
		}
	}
}

func rowsOf(o wire.Outcome) []string {
	var rks []string
	seen := map[string]bool{}
	for _, rv := range o.Rows {
		if !seen[rv.RK] {
			seen[rv.RK] = true
			rks = append(rks, rv.RK)
		}
	}
	return rks
}

func testRestore(t *testing.T, e *replaytest.Env, s *replaytest.Seeded, rng *rand.Rand) {
	// The whole table.
	to := s.Head / 3
	p, err := e.Repair.PlanRestore(e.Ctx, s.Table, store.AllPartitions, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) == 0 {
		t.Fatal("restore plan is empty")
	}
	applyPlan(t, e, s, p)
	replaytest.SameState(t, "restore table", stripWriters(replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, s.Head)), stripWriters(replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, to)))
	if p, err := e.Repair.PlanRestore(e.Ctx, s.Table, store.AllPartitions, to); err != nil || len(p.Steps) != 0 {
		t.Fatalf("restore again: %d steps, %v", len(p.Steps), err)
	}
	checkScan(t, s, replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, s.Head), store.AllPartitions, s.Head)

	// One partition, to another point; the others do not move.
	pk := s.Model.Keys()[0].PK
	to2 := s.Seqs[rng.IntN(len(s.Seqs))]
	others := replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, s.Head)
	p, err = e.Repair.PlanRestore(e.Ctx, s.Table, store.InPartition(pk), to2)
	if err != nil {
		t.Fatal(err)
	}
	applyPlan(t, e, s, p)
	replaytest.SameState(t, "restore partition", stripWriters(replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.InPartition(pk), s.Head)), stripWriters(replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.InPartition(pk), to2)))
	for k, r := range replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, s.Head) {
		if k.PK != pk && r.Seq != others[k].Seq {
			t.Fatalf("restore of %q changed %q/%q", pk, k.PK, k.RK)
		}
	}
	checkScan(t, s, replaytest.AsOfRows(t, e.Ctx, e.Hist, s.Table, store.AllPartitions, s.Head), store.AllPartitions, s.Head)
}

// stripWriters keeps only what restore restores: the values.
func stripWriters(in map[replaytest.Key]rows.Row) map[replaytest.Key]rows.Row {
	out := make(map[replaytest.Key]rows.Row, len(in))
	for k, r := range in {
		out[k] = rows.Row{PK: r.PK, RK: r.RK, Props: r.Props}
	}
	return out
}

// testApplied stops the projector, publishes more, and checks that the
// default snapshot sequence stays at what the projector applied.
func testApplied(t *testing.T, e *replaytest.Env, s *replaytest.Seeded) {
	// The projector acknowledges a batch after its outcomes are stored:
	// the ack floor reaches the head a moment after the last outcome.
	projectiontest.WaitFor(t, e.Ctx, "the applied sequence is the head", func() (bool, error) {
		got, err := e.Src.AppliedSeq(e.Ctx)
		if got > s.Head {
			t.Fatalf("applied sequence %d, past the head %d", got, s.Head)
		}
		return got == s.Head, err
	})
	e.Stop()
	more := replaytest.Workload(rand.New(rand.NewPCG(7, 7)), s.Table, "late", 5, []string{"p0", "p1"}, []string{"r0"})
	e.Publish(more)
	if got, err := e.Src.AppliedSeq(e.Ctx); err != nil || got != s.Head {
		t.Fatalf("applied sequence %d (%v) with the projector stopped, want %d", got, err, s.Head)
	}
	var buf bytes.Buffer
	st, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: s.Table})
	if err != nil || st.Header.Seq != s.Head {
		t.Fatalf("default snapshot at %d (%v), want %d", st.Header.Seq, err, s.Head)
	}
}

// testVerify: a table verifies against its journal; a rebuilt table
// equals it at the rebuild's point while the live table has moved on;
// then a row changed, a row added and a version row deleted directly in
// the store are named by Verify and DiffTables, exactly those three.
func testVerify(t *testing.T, e *replaytest.Env, s *replaytest.Seeded) {
	check := func(what string, st rebuild.DiffStats, err error, want map[string]rebuild.DiffKind, found map[string]rebuild.Difference) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if st.Rows == 0 || st.Missing+st.Extra+st.Changed != int64(len(want)) || len(found) != len(want) {
			t.Fatalf("%s: %+v, differences %v, want %v", what, st, found, want)
		}
		for k, kind := range want {
			if d, ok := found[k]; !ok || d.Kind != kind {
				t.Fatalf("%s: %s: %+v, want %s", what, k, d, kind)
			}
		}
	}
	collect := func() (map[string]rebuild.Difference, func(rebuild.Difference) error) {
		found := make(map[string]rebuild.Difference)
		return found, func(d rebuild.Difference) error {
			found[d.PK+"/"+d.Key] = d
			return nil
		}
	}
	found, onDiff := collect()
	st, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: s.Table, OnDiff: onDiff})
	check("verify", st, err, nil, found)
	if st.Seq != s.Head || st.Rebuild == nil || st.Rebuild.Applied == 0 {
		t.Fatalf("verify at %d, rebuild %+v; want the applied sequence %d", st.Seq, st.Rebuild, s.Head)
	}
	// Re-projected into another store: the same rows.
	local, err := sqlite.Open(e.Ctx, filepath.Join(t.TempDir(), "scratch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	found, onDiff = collect()
	st, err = e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: s.Table, Scratch: local, OnDiff: onDiff})
	check("verify into a local store", st, err, nil, found)

	// A shadow rebuilt to mid equals the live table as it stood at mid.
	mid := s.Head / 2
	shadow := replaytest.UniqueTable("Shadow")
	if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: shadow, To: mid}); err != nil {
		t.Fatal(err)
	}
	found, onDiff = collect()
	st, err = e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: s.Table, Against: shadow, Seq: mid, OnDiff: onDiff})
	check("diff against a shadow at its point", st, err, nil, found)
	if st, err := e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: s.Table, Against: shadow}); err != nil || st.Identical() || st.Extra == 0 {
		t.Fatalf("diff of every row against a shadow of the past: %+v %v; want the rows written since", st, err)
	}

	// Writes that bypass the journal.
	projectiontest.SkipLayoutCheck(t, s.Table) // tampered with on purpose
	live := replaytest.CurrentRows(t, e.Ctx, e.Store, s.Table)
	deadTomb := func(en store.Entity) bool {
		rk, _, _, _ := rows.ParseKey(en.RK)
		_, alive := live[replaytest.Key{PK: en.PK, RK: rk}]
		return en.Props[rows.ColDeleted].Bool && !alive
	}
	var tip, version store.Entity
	err = store.All(e.Ctx, e.Store, s.Table, store.Query{AllPartitions: true}, func(en store.Entity) error {
		switch {
		case tip.RK == "" && strings.HasPrefix(en.RK, rows.TipPrefix):
			tip = en
		case strings.HasPrefix(en.RK, rows.OldPrefix) && !deadTomb(version):
			// The tombstone of a deleted row if there is one: deleting it
			// must not make the row look alive at the point (it did once).
			version = en
		}
		return nil
	})
	if err != nil || tip.RK == "" || version.RK == "" {
		t.Fatalf("no tip or version row to tamper with: %v", err)
	}
	tamper := []struct {
		pk  string
		ops []store.Op
	}{
		{tip.PK, []store.Op{{Kind: store.Merge, RK: tip.RK, Props: edm.Entity{"n": edm.Int32(-1)}, IfMatch: "*"}}},
		{tip.PK, []store.Op{{Kind: store.Insert, RK: "intruder", Props: edm.Entity{"x": edm.Int32(1)}}}},
		{version.PK, []store.Op{{Kind: store.Delete, RK: version.RK, IfMatch: "*"}}},
	}
	for _, tm := range tamper {
		if _, err := e.Store.Transact(e.Ctx, s.Table, tm.pk, tm.ops); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]rebuild.DiffKind{tip.PK + "/" + tip.RK: rebuild.Changed, tip.PK + "/intruder": rebuild.Extra, version.PK + "/" + version.RK: rebuild.Missing}
	found, onDiff = collect()
	st, err = e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: s.Table, OnDiff: onDiff})
	check("verify after writes outside the journal", st, err, want, found)
	if cols := found[tip.PK+"/"+tip.RK].Columns; len(cols) != 1 || cols[0].Name != "n" || cols[0].After.Int != -1 {
		t.Fatalf("changed columns %+v, want n: -1", cols)
	}
	rebuilt := replaytest.UniqueTable("Rebuilt")
	if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: rebuilt, To: s.Head}); err != nil {
		t.Fatal(err)
	}
	found, onDiff = collect()
	st, err = e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: s.Table, Against: rebuilt, Seq: s.Head, OnDiff: onDiff})
	check("diff after writes outside the journal", st, err, want, found)
}
