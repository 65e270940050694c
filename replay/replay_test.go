package replay_test

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
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// TestReplay runs every replay operation against a real projector over a
// seeded workload, on each table backend, and checks it against the
// model.
func TestReplay(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			n, pks, rks := 400, []string{"p0", "p1", "p2", "p3"}, []string{"r0", "r0:x", "r1", "a%b", "r2", "r3"}
			if b.small {
				n, pks, rks = 150, pks[:2], rks[:5]
			}
			if b.paged {
				n /= 2 // the same paths, fewer round trips
			}
			rng := rand.New(rand.NewPCG(42, uint64(len(b.name))))
			e := newEnv(t, b.open(t))
			s := e.seed(rng, n, pks, rks)
			t.Run("asof", func(t *testing.T) { testAsOf(t, e, s, rng, b.small) })
			t.Run("history", func(t *testing.T) { testHistory(t, e, s) })
			t.Run("blame", func(t *testing.T) { testBlame(t, e, s) })
			t.Run("rebuild", func(t *testing.T) { testRebuild(t, e, s, rng) })
			t.Run("snapshot", func(t *testing.T) { testSnapshot(t, e, s, b.paged) })
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
func points(s *seeded, rng *rand.Rand, n int) ([]replay.Point, []uint64) {
	var ps []replay.Point
	var want []uint64
	ps = append(ps, replay.Seq(0), replay.Seq(s.head), replay.Head())
	want = append(want, 0, s.head, s.head)
	for len(ps) < n {
		i := rng.IntN(len(s.cmds))
		seq := s.seqs[i]
		switch len(ps) % 3 {
		case 0:
			ps, want = append(ps, replay.Seq(seq)), append(want, seq)
		case 1:
			ps, want = append(ps, replay.Cmd(s.cmds[i].ID)), append(want, seq)
		default:
			// A time between two commands, or exactly one's.
			at := s.times[seq]
			if rng.IntN(2) == 0 {
				at = at.Add(-time.Duration(rng.IntN(int(time.Millisecond))))
			}
			var w uint64
			for q, t := range s.times {
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
func testAsOf(t *testing.T, e *env, s *seeded, rng *rand.Rand, small bool) {
	n := 18
	if small {
		n = 9
	}
	ps, want := points(s, rng, n)
	pks := map[string]bool{}
	for _, k := range s.model.keys() {
		pks[k.pk] = true
	}
	for i, p := range ps {
		seq, err := e.rp.Resolve(e.ctx, p)
		if err != nil {
			t.Fatalf("resolve %s: %v", p, err)
		}
		if seq != want[i] {
			t.Fatalf("resolve %s = %d, want %d", p, seq, want[i])
		}
		// Every row.
		for _, k := range s.model.keys() {
			got, ok, err := e.rp.AsOfRow(e.ctx, s.table, k.pk, k.rk, seq)
			if err != nil {
				t.Fatal(err)
			}
			w, wok := s.model.at(k, seq)
			if ok != wok {
				t.Fatalf("asof %q/%q at %d (%s): exists=%v, model %v", k.pk, k.rk, seq, p, ok, wok)
			}
			if w.Cmd != "" { // live or tombstone: both are returned
				if err := sameRow(got, w); err != nil {
					t.Fatalf("asof %q/%q at %d: %v", k.pk, k.rk, seq, err)
				}
			}
		}
		// Each partition and the table.
		for pk := range pks {
			checkScan(t, s, asofRows(t, e.ctx, e.rp, s.table, store.InPartition(pk), seq), store.InPartition(pk), seq)
		}
		checkScan(t, s, asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, seq), store.AllPartitions, seq)
	}
	// Beyond the head is no point.
	if _, err := e.rp.Resolve(e.ctx, replay.Seq(s.head+1000)); !errors.Is(err, replay.ErrBadPoint) {
		t.Errorf("resolve beyond head: %v, want ErrBadPoint", err)
	}
	if _, err := e.rp.Resolve(e.ctx, replay.Cmd("never-published")); !errors.Is(err, replay.ErrNoOutcome) {
		t.Errorf("resolve unknown command: %v, want ErrNoOutcome", err)
	}
}

func checkScan(t *testing.T, s *seeded, got map[key]rows.Row, part store.Partition, seq uint64) {
	t.Helper()
	want := s.model.stateAt(part, seq)
	if len(got) != len(want) {
		t.Fatalf("asof %s at %d: %d rows, model %d", part, seq, len(got), len(want))
	}
	for k, w := range want {
		if err := sameRow(got[k], w); err != nil {
			t.Fatalf("asof %s at %d, row %q: %v", part, seq, k.rk, err)
		}
	}
}

func testHistory(t *testing.T, e *env, s *seeded) {
	for _, k := range s.model.keys() {
		rows, err := e.rp.History(e.ctx, s.table, k.pk, k.rk)
		if err != nil {
			t.Fatal(err)
		}
		want := s.model.history(k)
		if len(rows) != len(want) {
			t.Fatalf("history %q/%q: %d versions, model %d", k.pk, k.rk, len(rows), len(want))
		}
		for i := range rows {
			if err := sameRow(rows[i], want[i]); err != nil {
				t.Fatalf("history %q/%q v%d: %v", k.pk, k.rk, i, err)
			}
			if rows[i].Tip != (i == len(rows)-1 && !want[i].Deleted) {
				t.Fatalf("history %q/%q v%d: tip %v", k.pk, k.rk, i, rows[i].Tip)
			}
		}
	}
	d := replay.Diff(events.Entity{"a": events.Int32(1), "b": events.String("x")}, events.Entity{"a": events.Int64(1), "c": events.Bool(true)})
	if len(d) != 3 || d[0].Name != "a" || !d[0].HadBefore || !d[0].HasNow || d[1].Name != "b" || d[1].HasNow || d[2].Name != "c" || d[2].HadBefore {
		t.Fatalf("Diff: %+v", d)
	}
}

func testBlame(t *testing.T, e *env, s *seeded) {
	for i, c := range s.cmds {
		if i%7 != 0 || c.Table != s.table {
			continue
		}
		b, err := e.rp.Blame(e.ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		o := s.outcomes[c.ID]
		if b.Outcome.Status != o.Status || b.Outcome.Seq != s.seqs[i] || b.Command == nil || b.Command.ID != c.ID || !strings.HasPrefix(b.Subject, "journal."+s.table+".") {
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
			w := s.model.history(key{c.PK, v.RK})[v.Version]
			if v.Seq != s.seqs[i] || v.Cmd != c.ID || !want[fmt.Sprintf("%s@%d", v.RK, v.Version)] {
				t.Fatalf("blame %s: version %+v, outcome rows %+v", c.ID, v, o.Rows)
			}
			if err := sameRow(v, w); err != nil {
				t.Fatalf("blame %s, %q v%d: %v", c.ID, v.RK, v.Version, err)
			}
		}
	}
}

func testRebuild(t *testing.T, e *env, s *seeded, rng *rand.Rand) {
	live := allRows(t, e.ctx, e.st, s.table)
	for i, to := range []uint64{s.head / 3, s.head * 2 / 3, s.seqs[rng.IntN(len(s.seqs))], 0} {
		into := uniqueTable("Rebuilt")
		var calls int
		st, err := e.rp.Rebuild(e.ctx, replay.RebuildConfig{Table: s.table, Into: into, To: to, Workers: 1 + i,
			Progress: func(done, total int64) { calls++ }})
		if err != nil {
			t.Fatal(err)
		}
		if calls == 0 || st.Commands == 0 || st.Applied == 0 || st.Rejected == 0 {
			t.Fatalf("rebuild to %d: %+v, %d progress calls", to, st, calls)
		}
		if to == 0 {
			// To the head: the whole table, versions and tombstones included.
			sameTables(t, "rebuild to head", allRows(t, e.ctx, e.st, into), live)
			continue
		}
		sameState(t, fmt.Sprintf("rebuild to %d", to), currentRows(t, e.ctx, e.st, into), asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, to))
	}
	// Into a table that holds rows: refused.
	_, err := e.rp.Rebuild(e.ctx, replay.RebuildConfig{Table: s.table, Into: s.other})
	if !errors.Is(err, replay.ErrNotEmpty) {
		t.Fatalf("rebuild into a full table: %v", err)
	}
}

func testSnapshot(t *testing.T, e *env, s *seeded, paged bool) {
	// Default: the sequence the projector has applied, the head by now.
	// Partitions are read in parallel, through every wrapper too (the
	// store lists them).
	var buf bytes.Buffer
	st, err := e.rp.Snapshot(e.ctx, &buf, replay.SnapshotConfig{Table: s.table})
	if err != nil {
		t.Fatal(err)
	}
	if st.Header.Seq != s.head || st.Entities == 0 || st.Partitions == 0 {
		t.Fatalf("snapshot: %+v, head %d", st, s.head)
	}
	into := uniqueTable("Loaded")
	ls, err := e.rp.Load(e.ctx, bytes.NewReader(buf.Bytes()), replay.LoadConfig{Into: into})
	if err != nil {
		t.Fatal(err)
	}
	if ls.Entities != st.Entities || ls.Header != st.Header {
		t.Fatalf("load %+v of snapshot %+v", ls, st)
	}
	live := allRows(t, e.ctx, e.st, s.table)
	sameTables(t, "load of a snapshot at the head", allRows(t, e.ctx, e.st, into), live)

	// The loaded table has no commands in the journal: its snapshot reads
	// the table itself and holds every row.
	var again bytes.Buffer
	st2, err := e.rp.Snapshot(e.ctx, &again, replay.SnapshotConfig{Table: into, Seq: s.head})
	if err != nil {
		t.Fatal(err)
	}
	if st2.Entities != st.Entities {
		t.Fatalf("snapshot of the loaded table: %d entities, the original %d", st2.Entities, st.Entities)
	}

	// At an earlier sequence, while the table holds later rows: equal to
	// a rebuild to that sequence; then the journal tail gives the live table.
	mid := s.head / 2
	buf.Reset()
	if st, err = e.rp.Snapshot(e.ctx, &buf, replay.SnapshotConfig{Table: s.table, Seq: mid, Workers: 3}); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()
	rebuilt := uniqueTable("Rebuilt")
	if _, err := e.rp.Rebuild(e.ctx, replay.RebuildConfig{Table: s.table, Into: rebuilt, To: mid}); err != nil {
		t.Fatal(err)
	}
	into = uniqueTable("Loaded")
	if _, err := e.rp.Load(e.ctx, bytes.NewReader(snap), replay.LoadConfig{Into: into}); err != nil {
		t.Fatal(err)
	}
	sameTables(t, "snapshot at mid vs rebuild to mid", allRows(t, e.ctx, e.st, into), allRows(t, e.ctx, e.st, rebuilt))

	tail := uniqueTable("Tail")
	rs, err := e.rp.Rebuild(e.ctx, replay.RebuildConfig{Into: tail, Snapshot: bytes.NewReader(snap)})
	if err != nil {
		t.Fatal(err)
	}
	if rs.From != mid+1 || rs.Table != s.table || rs.Loaded != st.Entities {
		t.Fatalf("rebuild from snapshot: %+v", rs)
	}
	sameTables(t, "snapshot + journal tail", allRows(t, e.ctx, e.st, tail), live)

	// Damaged files are refused.
	for name, bad := range map[string][]byte{
		"truncated": snap[:len(snap)*2/3],
		"no magic":  snap[3:],
		"empty":     nil,
	} {
		_, err := e.rp.Load(e.ctx, bytes.NewReader(bad), replay.LoadConfig{Into: uniqueTable("Bad")})
		if !errors.Is(err, replay.ErrBadSnapshot) {
			t.Errorf("load %s snapshot: %v, want ErrBadSnapshot", name, err)
		}
	}
}

// applyPlan applies p, checks every command applied, and feeds the
// commands to the model.
func applyPlan(t *testing.T, e *env, s *seeded, p *replay.Plan) []replay.Applied {
	t.Helper()
	res, err := e.rp.Apply(e.ctx, p)
	if err != nil {
		t.Fatalf("apply %s: %v", p.Kind, err)
	}
	for _, a := range res {
		if a.Outcome.Status != wire.StatusApplied {
			t.Fatalf("%s: %s (%s)", a.Command.ID, a.Outcome.Status, a.Outcome.Reason)
		}
		if !a.Publish.Duplicate {
			if !s.model.apply(a.Outcome.Seq, a.Command) {
				t.Fatalf("%s applied, but not in the model", a.Command.ID)
			}
			s.times[a.Outcome.Seq] = a.Outcome.At
			s.head = max(s.head, a.Outcome.Seq)
		}
	}
	return res
}

// untouched finds an applied command whose rows no later command changed,
// and one whose rows later commands did change.
func untouched(s *seeded) (clean, changed string) {
	for i := len(s.cmds) - 1; i >= 0; i-- {
		c := s.cmds[i]
		o := s.outcomes[c.ID]
		if c.Table != s.table || o.Status != wire.StatusApplied {
			continue
		}
		isClean := true
		for _, rv := range o.Rows {
			if s.model.latest(key{c.PK, rv.RK}).Cmd != c.ID {
				isClean = false
			}
		}
		switch {
		case isClean && clean == "" && len(o.Rows) > 1:
			clean = c.ID
		case !isClean && changed == "" && i < len(s.cmds)/2:
			changed = c.ID
		}
	}
	return clean, changed
}

func testUndo(t *testing.T, e *env, s *seeded) {
	clean, changed := untouched(s)
	if clean == "" || changed == "" {
		t.Fatalf("workload has no command to undo: %q %q", clean, changed)
	}
	o := s.outcomes[clean]
	var c *events.Command
	for _, x := range s.cmds {
		if x.ID == clean {
			c = x
		}
	}
	before := make(map[string]int)
	for _, rv := range o.Rows {
		rows, _ := e.rp.History(e.ctx, s.table, c.PK, rv.RK)
		before[rv.RK] = len(rows)
	}

	p, err := e.rp.PlanUndo(e.ctx, clean, replay.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts()) != 0 || len(p.Commands) != 1 || p.Commands[0].ID != "undo-"+clean+"-0" || p.Commands[0].Meta[replay.MetaUndoOf] != clean {
		t.Fatalf("undo plan of untouched %s: %+v", clean, p)
	}
	applyPlan(t, e, s, p)
	// Each row is back to the version before, as a new version; history kept.
	for _, rk := range rowsOf(o) {
		k := key{c.PK, rk}
		got, ok, err := e.rp.AsOfRow(e.ctx, s.table, c.PK, rk, s.head)
		if err != nil {
			t.Fatal(err)
		}
		want, wok := s.model.at(k, o.Seq-1)
		if ok != wok || ok && !got.Props.Equal(want.Props) {
			t.Fatalf("after undo of %s, %q: %v %#v, want %v %#v", clean, rk, ok, got.Props, wok, want.Props)
		}
		rows, _ := e.rp.History(e.ctx, s.table, c.PK, rk)
		if len(rows) != before[rk]+1 {
			t.Fatalf("after undo, %q has %d versions, had %d", rk, len(rows), before[rk])
		}
	}
	// Applying the same plan again is deduplicated by the journal.
	res, err := e.rp.Apply(e.ctx, p)
	if err != nil || len(res) != 1 || !res[0].Publish.Duplicate {
		t.Fatalf("re-apply: %+v %v", res, err)
	}

	// Undoing the undo returns to the state before it.
	stateBefore := asofRows(t, e.ctx, e.rp, s.table, store.InPartition(c.PK), o.Seq)
	uu, err := e.rp.PlanUndo(e.ctx, "undo-"+clean+"-0", replay.UndoOptions{})
	if err != nil || len(uu.Conflicts()) != 0 || len(uu.Commands) != 1 {
		t.Fatalf("undo of undo: %+v %v", uu, err)
	}
	applyPlan(t, e, s, uu)
	after := asofRows(t, e.ctx, e.rp, s.table, store.InPartition(c.PK), s.head)
	for _, rk := range rowsOf(o) {
		k := key{c.PK, rk}
		if _, ok := stateBefore[k]; ok != (after[k].Cmd != "") || !after[k].Props.Equal(stateBefore[k].Props) {
			t.Fatalf("undo of undo, %q: %#v, want %#v", rk, after[k].Props, stateBefore[k].Props)
		}
	}

	// A command whose rows changed later: conflicts, nothing published
	// without Force.
	co := s.outcomes[changed]
	p, err = e.rp.PlanUndo(e.ctx, changed, replay.UndoOptions{})
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
	head, _ := e.j.Head(e.ctx)
	if _, err := e.rp.Apply(e.ctx, p); !errors.Is(err, replay.ErrConflicts) {
		t.Fatalf("apply with conflicts: %v, want ErrConflicts", err)
	}
	if h, _ := e.j.Head(e.ctx); h != head {
		t.Fatalf("apply with conflicts published: head %d -> %d", head, h)
	}
	// Forced: every row goes back to its version before the command.
	p, err = e.rp.PlanUndo(e.ctx, changed, replay.UndoOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Commands) == 0 {
		t.Skipf("forced undo of %s has nothing to change", changed)
	}
	applyPlan(t, e, s, p)
	for _, rk := range rowsOf(co) {
		k := key{co.PK, rk}
		got, ok, _ := e.rp.AsOfRow(e.ctx, s.table, co.PK, rk, s.head)
		want, wok := s.model.at(k, co.Seq-1)
		if ok != wok || ok && !got.Props.Equal(want.Props) {
			t.Fatalf("forced undo of %s, %q: %v %#v, want %v %#v", changed, rk, ok, got.Props, wok, want.Props)
		}
	}
	// A rejected command has nothing to undo.
	for _, c := range s.cmds {
		if s.outcomes[c.ID].Status == wire.StatusRejected {
			p, err := e.rp.PlanUndo(e.ctx, c.ID, replay.UndoOptions{})
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

func testRestore(t *testing.T, e *env, s *seeded, rng *rand.Rand) {
	// The whole table.
	to := s.head / 3
	p, err := e.rp.PlanRestore(e.ctx, s.table, store.AllPartitions, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) == 0 {
		t.Fatal("restore plan is empty")
	}
	applyPlan(t, e, s, p)
	sameState(t, "restore table", stripWriters(asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, s.head)), stripWriters(asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, to)))
	if p, err := e.rp.PlanRestore(e.ctx, s.table, store.AllPartitions, to); err != nil || len(p.Steps) != 0 {
		t.Fatalf("restore again: %d steps, %v", len(p.Steps), err)
	}
	checkScan(t, s, asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, s.head), store.AllPartitions, s.head)

	// One partition, to another point; the others do not move.
	pk := s.model.keys()[0].pk
	to2 := s.seqs[rng.IntN(len(s.seqs))]
	others := asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, s.head)
	p, err = e.rp.PlanRestore(e.ctx, s.table, store.InPartition(pk), to2)
	if err != nil {
		t.Fatal(err)
	}
	applyPlan(t, e, s, p)
	sameState(t, "restore partition", stripWriters(asofRows(t, e.ctx, e.rp, s.table, store.InPartition(pk), s.head)), stripWriters(asofRows(t, e.ctx, e.rp, s.table, store.InPartition(pk), to2)))
	for k, r := range asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, s.head) {
		if k.pk != pk && r.Seq != others[k].Seq {
			t.Fatalf("restore of %q changed %q/%q", pk, k.pk, k.rk)
		}
	}
	checkScan(t, s, asofRows(t, e.ctx, e.rp, s.table, store.AllPartitions, s.head), store.AllPartitions, s.head)
}

// stripWriters keeps only what restore restores: the values.
func stripWriters(in map[key]rows.Row) map[key]rows.Row {
	out := make(map[key]rows.Row, len(in))
	for k, r := range in {
		out[k] = rows.Row{PK: r.PK, RK: r.RK, Props: r.Props}
	}
	return out
}

// testApplied stops the projector, publishes more, and checks that the
// default snapshot sequence stays at what the projector applied.
func testApplied(t *testing.T, e *env, s *seeded) {
	// The projector acknowledges a batch after its outcomes are stored:
	// the ack floor reaches the head a moment after the last outcome.
	projectiontest.WaitFor(t, e.ctx, "the applied sequence is the head", func() (bool, error) {
		got, err := e.rp.AppliedSeq(e.ctx)
		if got > s.head {
			t.Fatalf("applied sequence %d, past the head %d", got, s.head)
		}
		return got == s.head, err
	})
	e.stop()
	more := workload(rand.New(rand.NewPCG(7, 7)), s.table, "late", 5, []string{"p0", "p1"}, []string{"r0"})
	e.publish(more)
	if got, err := e.rp.AppliedSeq(e.ctx); err != nil || got != s.head {
		t.Fatalf("applied sequence %d (%v) with the projector stopped, want %d", got, err, s.head)
	}
	var buf bytes.Buffer
	st, err := e.rp.Snapshot(e.ctx, &buf, replay.SnapshotConfig{Table: s.table})
	if err != nil || st.Header.Seq != s.head {
		t.Fatalf("default snapshot at %d (%v), want %d", st.Header.Seq, err, s.head)
	}
}

// testVerify: a table verifies against its journal; a rebuilt table
// equals it at the rebuild's point while the live table has moved on;
// then a row changed, a row added and a version row deleted directly in
// the store are named by Verify and DiffTables, exactly those three.
func testVerify(t *testing.T, e *env, s *seeded) {
	check := func(what string, st replay.DiffStats, err error, want map[string]replay.DiffKind, found map[string]replay.Difference) {
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
	collect := func() (map[string]replay.Difference, func(replay.Difference) error) {
		found := make(map[string]replay.Difference)
		return found, func(d replay.Difference) error {
			found[d.PK+"/"+d.Key] = d
			return nil
		}
	}
	found, onDiff := collect()
	st, err := e.rp.Verify(e.ctx, replay.VerifyConfig{Table: s.table, OnDiff: onDiff})
	check("verify", st, err, nil, found)
	if st.Seq != s.head || st.Rebuild == nil || st.Rebuild.Applied == 0 {
		t.Fatalf("verify at %d, rebuild %+v; want the applied sequence %d", st.Seq, st.Rebuild, s.head)
	}
	// Re-projected into another store: the same rows.
	local, err := sqlite.Open(e.ctx, filepath.Join(t.TempDir(), "scratch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	found, onDiff = collect()
	st, err = e.rp.Verify(e.ctx, replay.VerifyConfig{Table: s.table, Scratch: local, OnDiff: onDiff})
	check("verify into a local store", st, err, nil, found)

	// A shadow rebuilt to mid equals the live table as it stood at mid.
	mid := s.head / 2
	shadow := uniqueTable("Shadow")
	if _, err := e.rp.Rebuild(e.ctx, replay.RebuildConfig{Table: s.table, Into: shadow, To: mid}); err != nil {
		t.Fatal(err)
	}
	found, onDiff = collect()
	st, err = e.rp.DiffTables(e.ctx, replay.DiffConfig{Table: s.table, Against: shadow, Seq: mid, OnDiff: onDiff})
	check("diff against a shadow at its point", st, err, nil, found)
	if st, err := e.rp.DiffTables(e.ctx, replay.DiffConfig{Table: s.table, Against: shadow}); err != nil || st.Identical() || st.Extra == 0 {
		t.Fatalf("diff of every row against a shadow of the past: %+v %v; want the rows written since", st, err)
	}

	// Writes that bypass the journal.
	projectiontest.SkipLayoutCheck(t, s.table) // tampered with on purpose
	live := currentRows(t, e.ctx, e.st, s.table)
	deadTomb := func(en store.Entity) bool {
		rk, _, _, _ := rows.ParseKey(en.RK)
		_, alive := live[key{en.PK, rk}]
		return en.Props[rows.ColDeleted].Bool && !alive
	}
	var tip, version store.Entity
	err = store.All(e.ctx, e.st, s.table, store.Query{AllPartitions: true}, func(en store.Entity) error {
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
		{tip.PK, []store.Op{{Kind: store.Merge, RK: tip.RK, Props: events.Entity{"n": events.Int32(-1)}, IfMatch: "*"}}},
		{tip.PK, []store.Op{{Kind: store.Insert, RK: "intruder", Props: events.Entity{"x": events.Int32(1)}}}},
		{version.PK, []store.Op{{Kind: store.Delete, RK: version.RK, IfMatch: "*"}}},
	}
	for _, tm := range tamper {
		if _, err := e.st.Transact(e.ctx, s.table, tm.pk, tm.ops); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]replay.DiffKind{tip.PK + "/" + tip.RK: replay.Changed, tip.PK + "/intruder": replay.Extra, version.PK + "/" + version.RK: replay.Missing}
	found, onDiff = collect()
	st, err = e.rp.Verify(e.ctx, replay.VerifyConfig{Table: s.table, OnDiff: onDiff})
	check("verify after writes outside the journal", st, err, want, found)
	if cols := found[tip.PK+"/"+tip.RK].Columns; len(cols) != 1 || cols[0].Name != "n" || cols[0].After.Int != -1 {
		t.Fatalf("changed columns %+v, want n: -1", cols)
	}
	rebuilt := uniqueTable("Rebuilt")
	if _, err := e.rp.Rebuild(e.ctx, replay.RebuildConfig{Table: s.table, Into: rebuilt, To: s.head}); err != nil {
		t.Fatal(err)
	}
	found, onDiff = collect()
	st, err = e.rp.DiffTables(e.ctx, replay.DiffConfig{Table: s.table, Against: rebuilt, Seq: s.head, OnDiff: onDiff})
	check("diff after writes outside the journal", st, err, want, found)
}
