package snapshot_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// A rejected raw message on the empty-key subject journal.<table>.= must
// not change what a snapshot holds: the partition list once came from the
// journal's subjects, held "", and the store read "" as every partition,
// so every row was written twice and the snapshot could not be loaded.
func TestSnapshotAfterRejectedEmptyKeyMessage(t *testing.T) {
	for _, b := range replaytest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel() // each backend its own pipeline
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot))
			table := replaytest.UniqueTable("Snapraw")
			var cmds []*events.Command
			for i, pk := range []string{"a", "b", "c"} {
				cmds = append(cmds, &events.Command{ID: "snapraw-" + pk, Table: table, PK: pk, Ops: []events.RowOp{
					{Op: events.OpUpsert, RK: "r1", Entity: edm.Entity{"n": edm.Int32(int32(i))}},
					{Op: events.OpUpsert, RK: "r2", Entity: edm.Entity{"n": edm.Int32(int32(i))}},
				}})
			}
			e.Publish(cmds)
			m := nats.NewMsg(wire.JournalPrefix + "." + table + ".=")
			m.Header.Set("Content-Type", wire.ContentTypeJSON)
			m.Header.Set("Nats-Msg-Id", "snapraw-bad")
			m.Data = []byte(`{"id":"snapraw-bad",`)
			if _, err := e.JS.PublishMsg(e.Ctx, m); err != nil {
				t.Fatal(err)
			}
			out := e.Await([]string{"snapraw-a", "snapraw-b", "snapraw-c", "snapraw-bad"})
			if o := out["snapraw-bad"]; o.Status != wire.StatusRejected {
				t.Fatalf("raw message: %+v, want rejected", o)
			}
			want := replaytest.AllRows(t, e.Ctx, e.Store, table)

			var buf bytes.Buffer
			st, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: table, Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			fences := 0 // AllRows leaves them out; a snapshot carries them
			if err := replay.FenceRows(e.Ctx, e.Store, table, store.AllPartitions, func(store.Entity) error { fences++; return nil }); err != nil {
				t.Fatal(err)
			}
			if st.Entities != int64(len(want)+fences) {
				t.Errorf("snapshot holds %d entities, the table %d and %d fences", st.Entities, len(want), fences)
			}
			into := replaytest.UniqueTable("Snaprawcopy")
			if _, err := e.Snap.Load(e.Ctx, &buf, snapshot.LoadConfig{Into: into}); err != nil {
				t.Fatalf("load: %v", err)
			}
			replaytest.SameTables(t, "loaded", replaytest.AllRows(t, e.Ctx, e.Store, into), want)
		})
	}
}

// The empty PartitionKey, which Azure allows, is a partition like any other
// from end to end: published by the writer and by a raw client on the
// subject journal.<table>.=, applied, read alone or with the table, in its
// history, change feed, snapshot, rebuild and restore.
func TestEmptyPartitionKey(t *testing.T) {
	for _, b := range replaytest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel() // each backend its own pipeline
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Repair|replaytest.Rebuild|replaytest.Snapshot))
			table := replaytest.UniqueTable("Emptypk")
			ent := func(n int32) edm.Entity { return edm.Entity{"n": edm.Int32(n)} }
			cmds := []*events.Command{
				{ID: "e1", Table: table, PK: "", Ops: []events.RowOp{{Op: events.OpInsert, RK: "r1", Entity: ent(1)}, {Op: events.OpInsert, RK: "r2", Entity: ent(2)}}},
				{ID: "e2", Table: table, PK: "a", Ops: []events.RowOp{{Op: events.OpInsert, RK: "r1", Entity: ent(3)}}},
				{ID: "e3", Table: table, PK: "", Ops: []events.RowOp{{Op: events.OpDelete, RK: "r2"}}},
			}
			seqs := e.Publish(cmds)
			// A client that is not Go: JSON on the empty-key subject.
			m := nats.NewMsg(wire.JournalSubject(table, ""))
			if m.Subject != wire.JournalPrefix+"."+strings.ToLower(table)+".=" {
				t.Fatalf("subject %q", m.Subject)
			}
			m.Header.Set("Content-Type", wire.ContentTypeJSON)
			m.Header.Set("Nats-Msg-Id", "e4")
			m.Data = []byte(`{"id":"e4","table":"` + table + `","pk":"","ops":[{"op":"merge","rk":"r1","ifVersion":0,"entity":{"m":true}}]}`)
			ack, err := e.JS.PublishMsg(e.Ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			out := e.Await([]string{"e1", "e2", "e3", "e4"})
			for id, o := range out {
				if o.Status != wire.StatusApplied || o.PK != map[string]string{"e2": "a"}[id] {
					t.Fatalf("%s: %+v, want applied in its partition", id, o)
				}
			}
			// The stored subject carries the shard and the empty-key token.
			raw, err := e.Journal.Get(e.Ctx, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			if tbl, _, pk, err := wire.ParseJournalSubject(raw.Subject); err != nil || tbl != strings.ToLower(table) || pk != "" {
				t.Fatalf("stored subject %q: %q %q %v", raw.Subject, tbl, pk, err)
			}

			rows := replaytest.AsOfRows(t, e.Ctx, e.Hist, table, store.InPartition(""), ack.Sequence)
			if len(rows) != 1 || rows[replaytest.Key{PK: "", RK: "r1"}].Version != 1 || !rows[replaytest.Key{PK: "", RK: "r1"}].Props["m"].Bool {
				t.Fatalf("partition \"\": %+v, want r1 at version 1", rows)
			}
			if all := replaytest.AsOfRows(t, e.Ctx, e.Hist, table, store.AllPartitions, ack.Sequence); len(all) != 2 {
				t.Fatalf("the table: %d rows, want 2", len(all))
			}
			if at1 := replaytest.AsOfRows(t, e.Ctx, e.Hist, table, store.InPartition(""), seqs[0]); len(at1) != 2 {
				t.Fatalf("partition \"\" after e1: %d rows, want 2", len(at1))
			}
			h, err := e.Hist.History(e.Ctx, table, "", "r2")
			if err != nil || len(h) != 2 || !h[1].Deleted {
				t.Fatalf("history of \"\"/r2: %+v, %v", h, err)
			}
			s, err := e.JS.Stream(e.Ctx, wire.ChangesStream)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetLastMsgForSubject(e.Ctx, wire.ChangeSubject(table, "")); err != nil {
				t.Fatalf("change feed of partition \"\": %v", err)
			}

			live := replaytest.AllRows(t, e.Ctx, e.Store, table)
			var buf bytes.Buffer
			if _, err := e.Snap.Take(e.Ctx, &buf, snapshot.Config{Table: table, Workers: 4}); err != nil {
				t.Fatal(err)
			}
			loaded := replaytest.UniqueTable("Emptypkload")
			if _, err := e.Snap.Load(e.Ctx, &buf, snapshot.LoadConfig{Into: loaded}); err != nil {
				t.Fatal(err)
			}
			replaytest.SameTables(t, "loaded", replaytest.AllRows(t, e.Ctx, e.Store, loaded), live)
			rebuilt := replaytest.UniqueTable("Emptypkrebuilt")
			if _, err := e.Rebuild.Rebuild(e.Ctx, rebuild.Config{Table: table, Into: rebuilt}); err != nil {
				t.Fatal(err)
			}
			replaytest.SameTables(t, "rebuilt", replaytest.AllRows(t, e.Ctx, e.Store, rebuilt), live)

			p, err := e.Repair.PlanRestore(e.Ctx, table, store.InPartition(""), seqs[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Steps) != 2 || p.AllPartitions {
				t.Fatalf("restore of partition \"\" to e1: %+v, want 2 steps (r1 back, r2 again)", p.Steps)
			}
			for _, st := range p.Steps {
				if st.PK != "" {
					t.Fatalf("restore of partition \"\" touches partition %q", st.PK)
				}
			}
		})
	}
}
