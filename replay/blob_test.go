package replay_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/internal/snapfile"
	"github.com/tablejournal/tablejournal/replay"
)

// TestSnapshotInBlob: a snapshot written to Azurite's blob service by
// azblob:// (against the connection string that names both endpoints),
// loaded back into a fresh table and rebuilt from with the journal tail:
// both diff identical against the source table.
func TestSnapshotInBlob(t *testing.T) {
	b := stores()[1] // Azurite: tables and blobs of one account
	e := newEnv(t, b.open(t))
	s := e.seed(rand.New(rand.NewPCG(5, 5)), 80, []string{"p0", "p1"}, []string{"r0", "r1", "r2"})
	tables, err := azuriteSrv.BlobConnectionString(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := func(loc string, seq uint64) {
		t.Helper()
		w, err := snapfile.Create(e.ctx, loc, tables, azauth.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.rp.Snapshot(e.ctx, w, replay.SnapshotConfig{Table: s.table, Seq: seq}); err != nil {
			w.Abort(err)
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	identical := func(what, other string, seq uint64) {
		t.Helper()
		st, err := e.rp.DiffTables(e.ctx, replay.DiffConfig{Table: s.table, Against: other, Seq: seq})
		if err != nil || !st.Identical() || st.Rows == 0 {
			t.Fatalf("%s: %+v %v", what, st, err)
		}
	}
	full := "azblob://snap" + s.table[len(s.table)-6:] + "/" + s.table + "/head.tjsnap"
	snap(full, s.head)
	r, err := snapfile.Open(e.ctx, full, tables, azauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	loaded := uniqueTable("FromBlob")
	_, err = e.rp.Load(e.ctx, r, replay.LoadConfig{Into: loaded})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	identical("load from a blob", loaded, s.head)

	mid := "azblob://snap" + s.table[len(s.table)-6:] + "/" + s.table + "/mid.tjsnap"
	snap(mid, s.head/2)
	if r, err = snapfile.Open(e.ctx, mid, tables, azauth.Config{}); err != nil {
		t.Fatal(err)
	}
	rebuilt := uniqueTable("Tail")
	_, err = e.rp.Rebuild(e.ctx, replay.RebuildConfig{Into: rebuilt, Snapshot: r})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	identical("rebuild from a blob and the journal tail", rebuilt, s.head)
}
