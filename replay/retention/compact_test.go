package retention_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/wire"
)

// TestCompact: a journal trimmed below a snapshot of one table keeps the
// other table's commands; the trimmed table rebuilt from the snapshot and
// the journal after it equals the live one, also after more commands; a
// rebuild without the snapshot, or to a point before the horizon, is
// refused naming the snapshot; a compaction with an older snapshot than
// the recorded horizon, or with none, is refused.
func TestCompact(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Rebuild|replaytest.Snapshot|replaytest.Retention), replaytest.WithJournal(journal.Config{AllowTrim: true}))
			s := e.Seed(rand.New(rand.NewPCG(19, 19)), 60, []string{"p0", "p1"}, []string{"r0", "r1", "r2"})
			count := func(table string, from, to uint64) int64 {
				var n int64
				if err := e.Journal.Read(e.Ctx, from, to, wire.TableFilter(table), func(journal.Msg) error { n++; return nil }); err != nil {
					t.Fatal(err)
				}
				return n
			}
			horizon := s.Seqs[len(s.Seqs)*2/3]
			wantTrim, otherBefore := count(s.Table, 1, horizon-1), count(s.Other, 1, s.Head)
			if wantTrim == 0 || otherBefore == 0 {
				t.Fatalf("replaytest.Workload too small: %d commands of %s and %d of %s before %d", wantTrim, s.Table, otherBefore, s.Other, horizon)
			}

			var snap bytes.Buffer
			if _, err := e.Snap.Take(e.Ctx, &snap, snapshot.Config{Table: s.Table, Seq: horizon}); err != nil {
				t.Fatal(err)
			}
			checked, err := snapshot.Check(bytes.NewReader(snap.Bytes()))
			if err != nil || checked.Header.Seq != horizon || len(checked.SHA256) != 64 {
				t.Fatalf("checked snapshot %+v: %v", checked, err)
			}
			if _, err := snapshot.Check(bytes.NewReader(snap.Bytes()[:snap.Len()-3])); !errors.Is(err, snapshot.ErrBadSnapshot) {
				t.Fatalf("truncated snapshot checked: %v, want ErrBadSnapshot", err)
			}

			cfg := retention.CompactConfig{Snapshot: checked, Location: "/snapshots/t.snap"}
			dry, err := e.Compactor.PlanCompact(e.Ctx, cfg)
			if err != nil || dry.Commands != wantTrim {
				t.Fatalf("dry run: %+v, %v; want %d commands", dry, err, wantTrim)
			}
			if n := count(s.Table, 1, horizon-1); n != wantTrim {
				t.Fatalf("the dry run trimmed: %d commands left, want %d", n, wantTrim)
			}
			if _, ok, err := e.Compactor.Horizon(e.Ctx, s.Table); ok || err != nil {
				t.Fatalf("the dry run recorded a horizon (%v)", err)
			}

			st, err := dry.Apply(e.Ctx)
			if err != nil || len(st.Counts) != 1 || st.Counts[0].N != wantTrim {
				t.Fatalf("compact: %+v, %v", st, err)
			}
			if _, err := dry.Apply(e.Ctx); !errors.Is(err, replay.ErrStale) {
				t.Fatalf("the compaction applied again: %v, want ErrStale (its commands are gone)", err)
			}
			if n := count(s.Table, 1, horizon-1); n != 0 {
				t.Fatalf("%d commands of %s left before the horizon %d", n, s.Table, horizon)
			}
			if n := count(s.Table, horizon, horizon); n != 1 {
				t.Fatalf("the command at the horizon is gone (%d)", n)
			}
			if n := count(s.Other, 1, s.Head); n != otherBefore {
				t.Fatalf("%s has %d commands after trimming %s, want %d", s.Other, n, s.Table, otherBefore)
			}
			h, ok, err := e.Compactor.Horizon(e.Ctx, s.Table)
			if rec, _ := st.Receipt.(retention.Horizon); rec.Seq != h.Seq || !rec.Recorded.Equal(h.Recorded) {
				t.Fatalf("the receipt %+v is not the horizon recorded, %+v", st.Receipt, h)
			}
			if err != nil || !ok || h.Seq != horizon || h.SHA256 != checked.SHA256 || h.Snapshot != cfg.Location {
				t.Fatalf("recorded horizon %+v %v (%v)", h, ok, err)
			}
			// Table names are case-insensitive: one horizon, whatever the spelling.
			for _, spelled := range []string{strings.ToUpper(s.Table), strings.ToLower(s.Table)} {
				if h2, ok, err := e.Compactor.Horizon(e.Ctx, spelled); !ok || err != nil || h2 != h {
					t.Fatalf("horizon of %s: %+v %v (%v), want %+v", spelled, h2, ok, err, h)
				}
			}

			// A projector starting again (Ensure) keeps the horizon.
			if _, err := journal.Ensure(e.Ctx, e.JS, journal.Config{AllowTrim: true}); err != nil {
				t.Fatal(err)
			}
			if h2, ok, err := e.Compactor.Horizon(e.Ctx, s.Table); !ok || err != nil || h2 != h {
				t.Fatalf("horizon after Ensure: %+v %v (%v), was %+v", h2, ok, err, h)
			}

			// Live traffic after the trim.
			more := replaytest.Workload(rand.New(rand.NewPCG(20, 20)), s.Table, "late", 12, []string{"p0", "p1"}, []string{"r0", "r1"})
			seqs := e.Publish(more)
			ids := make([]string, len(more))
			for i, c := range more {
				ids[i] = c.ID
			}
			e.Await(ids)
			head := seqs[len(seqs)-1]

			into := replaytest.UniqueTable("FromSnap")
			rs, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Into: into, Snapshot: bytes.NewReader(snap.Bytes())})
			if err != nil || rs.From != horizon+1 {
				t.Fatalf("rebuild from the snapshot: %+v, %v", rs, err)
			}
			diff, err := e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: s.Table, Against: into, Seq: head})
			if err != nil || !diff.Identical() {
				t.Fatalf("rebuilt from snapshot + journal differs from the live table: %+v, %v", diff, err)
			}

			_, err = e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: replaytest.UniqueTable("NoSnap")})
			if !errors.Is(err, retention.ErrBeforeHorizon) || !bytes.Contains([]byte(err.Error()), []byte(cfg.Location)) {
				t.Fatalf("rebuild without the snapshot: %v, want ErrBeforeHorizon naming %s", err, cfg.Location)
			}
			_, err = e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: strings.ToUpper(s.Table), Into: replaytest.UniqueTable("NoSnapUpper")})
			if !errors.Is(err, retention.ErrBeforeHorizon) {
				t.Fatalf("rebuild of %s without the snapshot: %v, want ErrBeforeHorizon", strings.ToUpper(s.Table), err)
			}
			_, err = e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: replaytest.UniqueTable("Early"), To: horizon - 1, Snapshot: bytes.NewReader(snap.Bytes())})
			if !errors.Is(err, retention.ErrBeforeHorizon) || !bytes.Contains([]byte(err.Error()), []byte(cfg.Location)) {
				t.Fatalf("rebuild to %d, before the horizon: %v, want ErrBeforeHorizon naming %s", horizon-1, err, cfg.Location)
			}
			// The untrimmed table still rebuilds from the journal alone.
			if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Other, Into: replaytest.UniqueTable("Other")}); err != nil {
				t.Fatalf("rebuild of the untrimmed table: %v", err)
			}

			// An older snapshot than the horizon, or none, trims nothing.
			var older bytes.Buffer
			if _, err := e.Snap.Take(e.Ctx, &older, snapshot.Config{Table: s.Table, Seq: horizon - 1}); err != nil {
				t.Fatal(err)
			}
			oc, err := snapshot.Check(&older)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Compactor.PlanCompact(e.Ctx, retention.CompactConfig{Snapshot: oc, Location: "old.snap"}); !errors.Is(err, retention.ErrNoSnapshotAtHorizon) {
				t.Fatalf("compact below the recorded horizon: %v, want ErrNoSnapshotAtHorizon", err)
			}
			if _, err := e.Compactor.PlanCompact(e.Ctx, retention.CompactConfig{Location: "none.snap"}); !errors.Is(err, retention.ErrNoSnapshotAtHorizon) {
				t.Fatalf("compact without a snapshot: %v, want ErrNoSnapshotAtHorizon", err)
			}
			if h2, _, _ := e.Compactor.Horizon(e.Ctx, s.Table); h2 != h {
				t.Fatalf("a refused compaction changed the horizon: %+v, was %+v", h2, h)
			}
		})
	}
}

// TestCompactDenyPurge: a journal created without AllowTrim (deny_purge)
// is never trimmed, and the error says why and what to do.
func TestCompactDenyPurge(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Stores()[0].Open(t), replaytest.With(replaytest.Rebuild|replaytest.Snapshot|replaytest.Retention))
	s := e.Seed(rand.New(rand.NewPCG(3, 19)), 24, []string{"p0"}, []string{"r0", "r1"})
	var snap bytes.Buffer
	if _, err := e.Snap.Take(e.Ctx, &snap, snapshot.Config{Table: s.Table, Seq: s.Head}); err != nil {
		t.Fatal(err)
	}
	checked, err := snapshot.Check(&snap)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Compactor.PlanCompact(e.Ctx, retention.CompactConfig{Snapshot: checked, Location: "t.snap"})
	if !errors.Is(err, retention.ErrTrimDenied) || !bytes.Contains([]byte(err.Error()), []byte("--journal-allow-trim")) {
		t.Fatalf("compact of a deny-purge journal: %v, want ErrTrimDenied naming --journal-allow-trim", err)
	}
	if _, ok, _ := e.Compactor.Horizon(e.Ctx, s.Table); ok {
		t.Fatal("a refused compaction recorded a horizon")
	}
	if bytes.Contains([]byte(err.Error()), []byte("--journal ")) || !bytes.Contains([]byte(err.Error()), []byte("--stream")) {
		t.Fatalf("the refusal names the journal flag as replay spells it, --stream: %v", err)
	}
	if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: s.Table, Into: replaytest.UniqueTable("Whole")}); err != nil {
		t.Fatalf("the journal is not whole: %v", err)
	}
}

// TestCompactAtRelativePath: compact given a relative snapshot path
// records the absolute one, so that a rebuild from another folder finds
// the snapshot (issue 28, item 10).
func TestCompactAtRelativePath(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Stores()[0].Open(t), replaytest.With(replaytest.Rebuild|replaytest.Snapshot|replaytest.Retention), replaytest.WithJournal(journal.Config{AllowTrim: true}))
	s := e.Seed(rand.New(rand.NewPCG(5, 28)), 24, []string{"p0"}, []string{"r0", "r1"})
	dir := t.TempDir()
	t.Chdir(dir)
	p, err := e.Compactor.PlanCompactAt(e.Ctx, retention.CompactAtConfig{Table: s.Table, Snapshot: "rel.snap", At: s.Head})
	if err != nil || !p.Taken {
		t.Fatalf("plan: %+v %v", p, err)
	}
	if _, err := p.Apply(e.Ctx); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "rel.snap")
	h, ok, err := e.Compactor.Horizon(e.Ctx, s.Table)
	if err != nil || !ok || h.Snapshot != want || p.Horizon.Snapshot != want {
		t.Fatalf("recorded %+v %v %v (planned %q), want the snapshot at %s", h, ok, err, p.Horizon.Snapshot, want)
	}
	t.Chdir(t.TempDir())
	f, _, err := e.Compactor.RecordedSnapshot(e.Ctx, s.Table, 0, "", azauth.Config{})
	if err != nil {
		t.Fatalf("the recorded snapshot, from another folder: %v", err)
	}
	f.Close()
}
