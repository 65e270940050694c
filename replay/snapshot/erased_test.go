package snapshot_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

// TestSnapshotKeepsEraseMarkers: a copy by snapshot and load holds the
// erase markers of the original (a partition erased, a row erased), as a
// rebuild does, and diff finds both copies identical to it (issue 36,
// item 7: the load lacked "p9" "erased").
func TestSnapshotKeepsEraseMarkers(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Snapshot|replaytest.Rebuild))
			table := replaytest.UniqueTable("SnapErased")
			var cmds []*events.Command
			var ids []string
			for i := range 20 {
				c := &events.Command{ID: fmt.Sprintf("%s-c%d", table, i), Table: table, PK: fmt.Sprintf("p%d", i%10),
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%2), Entity: edm.Entity{"n": edm.Int64(int64(i))}}}}
				cmds, ids = append(cmds, c), append(ids, c.ID)
			}
			e.Publish(cmds)
			e.Await(ids)
			rk := "r1"
			for _, er := range []*events.Erase{{ID: table + "-erase-p9", Table: table, PK: "p9"}, {ID: table + "-erase-p3", Table: table, PK: "p3", RK: &rk}} {
				res, err := e.Writer.PublishErase(e.Ctx, er)
				if err != nil {
					t.Fatal(err)
				}
				if o := e.Await([]string{er.ID})[er.ID]; o.Status != wire.StatusApplied || o.Seq != res.Seq {
					t.Fatalf("erase %s: %+v", er.ID, o)
				}
			}
			e.WaitProjected(e.Ctx)
			var snap bytes.Buffer
			st, err := e.Snap.Take(e.Ctx, &snap, snapshot.Config{Table: table})
			if err != nil {
				t.Fatal(err)
			}
			loaded := replaytest.UniqueTable("SnapErasedLoad")
			if _, err := e.Snap.Load(e.Ctx, bytes.NewReader(snap.Bytes()), snapshot.LoadConfig{Into: loaded}); err != nil {
				t.Fatal(err)
			}
			rebuilt := replaytest.UniqueTable("SnapErasedRebuilt")
			if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: table, Into: rebuilt, To: st.Header.Seq}); err != nil {
				t.Fatal(err)
			}
			for _, copy := range []string{loaded, rebuilt} {
				for pk, key := range map[string]string{"p9": rows.ErasedKey, "p3": rows.ErasedRowKey("r1")} {
					if _, err := e.Store.Get(e.Ctx, copy, pk, key); err != nil {
						t.Errorf("%s: the erase marker %s/%s: %v", copy, pk, key, err)
					}
				}
				d, err := e.Rebuild.DiffTables(e.Ctx, rebuild.DiffConfig{Table: table, Against: copy, Seq: st.Header.Seq})
				if err != nil || d.Missing+d.Extra+d.Changed != 0 {
					t.Errorf("diff %s against %s: %+v %v", table, copy, d, err)
				}
			}
		})
	}
}
