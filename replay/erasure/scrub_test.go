package erasure_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// layoutCases are the erases a test runs on both layouts: of a partition
// and of a row.
var layoutCases = []struct {
	layout   wire.Layout
	rowErase bool
}{{wire.LayoutVersioned, false}, {wire.LayoutVersioned, true}, {wire.LayoutPlain, false}, {wire.LayoutPlain, true}}

// TestEraseScrubsStoreFiles: after an erase on the embedded store, no file
// of the store (the database, its write-ahead log and index) holds an
// erased value, and the receipt says it looked (issue 28, item 2). Without
// the scrub the values stay in tables.db-wal, and without secure_delete in
// tables.db's freed pages. On a plain table (SPEC §4) the same holds of
// both its tables: the erased key has no row left in the table itself nor
// in its history, and no file holds a value of it.
func TestEraseScrubsStoreFiles(t *testing.T) {
	for _, c := range layoutCases {
		rowErase := c.rowErase
		name := fmt.Sprintf("row=%v", rowErase)
		if c.layout == wire.LayoutPlain {
			name += "/plain"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := sqlite.Open(t.Context(), filepath.Join(dir, "tables.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := replaytest.NewEnv(t, st, replaytest.With(replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
			table := replaytest.UniqueTable("scrub")
			e.SetLayout(e.Ctx, table, c.layout)
			secret := []byte("ALICE-SECRET-5e1b7c")
			var cmds []*events.Command
			for i := range 6 {
				cmds = append(cmds, upsert(fmt.Sprintf("a%d", i), table, "alice", "mail", fmt.Sprintf("%s-%d", secret, i)))
				cmds = append(cmds, upsert(fmt.Sprintf("b%d", i), table, "bob", "mail", fmt.Sprintf("bob-keeps-%d", i)))
			}
			e.Publish(cmds)
			e.Await(ids(cmds))
			if held := filesHolding(t, dir, secret); len(held) == 0 {
				t.Fatal("no file holds the value before the erase: the test sees nothing")
			}
			target := erasure.Target{Table: table, PK: "alice"}
			if rowErase {
				rk := "mail"
				target.RK = &rk
			}
			rec, err := e.Eraser.EraseKey(e.Ctx, target, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.Verified || rec.StoreFiles == nil || rec.StoreFiles.Values != 6 || len(rec.StoreFiles.Held) != 0 {
				t.Fatalf("receipt %+v, store files %+v", rec, rec.StoreFiles)
			}
			if held := filesHolding(t, dir, secret); len(held) != 0 {
				t.Fatalf("after the erase, %v hold the erased value", held)
			}
			vt := projectiontest.VersionTable(t, table, c.layout)
			for _, tb := range []string{table, vt} {
				for k, props := range replaytest.AllRows(t, e.Ctx, st, tb) {
					if k.PK == "alice" && (!rowErase || strings.Contains(k.RK, "mail")) && !strings.HasPrefix(k.RK, "erased") {
						t.Fatalf("after the erase, %s holds %v: %v", tb, k, props)
					}
				}
			}
			if c.layout == wire.LayoutPlain {
				projectiontest.CheckPlain(t, st, table)
				if len(replaytest.AllRows(t, e.Ctx, st, table)) == 0 {
					t.Fatal("the erase took the other partition's rows from the plain table")
				}
			}
			if held := filesHolding(t, dir, []byte("bob-keeps-5")); len(held) == 0 {
				t.Fatal("the other partition's value is gone from every file")
			}
		})
	}
}
