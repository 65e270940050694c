package snapshot_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
)

// TestSnapshotInBlob: a snapshot written to Azurite's blob service by
// azblob:// (against the connection string that names both endpoints),
// loaded back into a fresh table and rebuilt from with the journal tail:
// both diff identical against the source table.
func TestSnapshotInBlob(t *testing.T) {
	b := replaytest.Stores()[1] // Azurite: tables and blobs of one account
	e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Rebuild|replaytest.Snapshot))
	s := e.Seed(rand.New(rand.NewPCG(5, 5)), 80, []string{"p0", "p1"}, []string{"r0", "r1", "r2"})
	tables, err := replaytest.Azurite.BlobConnectionString(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := func(loc string, seq uint64) {
		t.Helper()
		w, err := snapshot.Create(e.Ctx, loc, tables, azauth.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Snap.Take(e.Ctx, w, snapshot.Config{Table: s.Table, Seq: seq}); err != nil {
			w.Abort(err)
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	identical := func(what, other string, seq uint64) {
		t.Helper()
		st, err := e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: s.Table, Against: other, Seq: seq})
		if err != nil || !st.Identical() || st.Rows == 0 {
			t.Fatalf("%s: %+v %v", what, st, err)
		}
	}
	full := "azblob://snap" + s.Table[len(s.Table)-6:] + "/" + s.Table + "/head.tjsnap"
	snap(full, s.Head)
	r, err := snapshot.Open(e.Ctx, full, tables, azauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	loaded := replaytest.UniqueTable("FromBlob")
	_, err = e.Snap.Load(e.Ctx, r, snapshot.LoadConfig{Into: loaded})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	identical("load from a blob", loaded, s.Head)

	mid := "azblob://snap" + s.Table[len(s.Table)-6:] + "/" + s.Table + "/mid.tjsnap"
	snap(mid, s.Head/2)
	if r, err = snapshot.Open(e.Ctx, mid, tables, azauth.Config{}); err != nil {
		t.Fatal(err)
	}
	rebuilt := replaytest.UniqueTable("Tail")
	_, err = e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Into: rebuilt, Snapshot: r})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	identical("rebuild from a blob and the journal tail", rebuilt, s.Head)
}
