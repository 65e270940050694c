package erasure_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// TestEraseScrubsStoreFiles: after an erase on the embedded store, no file
// of the store (the database, its write-ahead log and index) holds an
// erased value, and the receipt says it looked (issue 28, item 2). Without
// the scrub the values stay in tables.db-wal, and without secure_delete in
// tables.db's freed pages.
func TestEraseScrubsStoreFiles(t *testing.T) {
	for _, rowErase := range []bool{false, true} {
		t.Run(fmt.Sprintf("row=%v", rowErase), func(t *testing.T) {
			dir := t.TempDir()
			st, err := sqlite.Open(t.Context(), filepath.Join(dir, "tables.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := replaytest.NewEnv(t, st, replaytest.With(replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
			table := replaytest.UniqueTable("scrub")
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
			if held := filesHolding(t, dir, []byte("bob-keeps-5")); len(held) == 0 {
				t.Fatal("the other partition's value is gone from every file")
			}
		})
	}
}
