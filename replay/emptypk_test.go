package replay_test

import (
	"bytes"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// A rejected raw message on the empty-key subject journal.<table>.= must
// not change what a snapshot holds: the partition list once came from the
// journal's subjects, held "", and the store read "" as every partition,
// so every row was written twice and the snapshot could not be loaded.
func TestSnapshotAfterRejectedEmptyKeyMessage(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel() // each backend its own pipeline
			e := newEnv(t, b.open(t))
			table := uniqueTable("Snapraw")
			var cmds []*events.Command
			for i, pk := range []string{"a", "b", "c"} {
				cmds = append(cmds, &events.Command{ID: "snapraw-" + pk, Table: table, PK: pk, Ops: []events.RowOp{
					{Op: events.OpUpsert, RK: "r1", Entity: events.Entity{"n": events.Int32(int32(i))}},
					{Op: events.OpUpsert, RK: "r2", Entity: events.Entity{"n": events.Int32(int32(i))}},
				}})
			}
			e.publish(cmds)
			m := nats.NewMsg(wire.JournalPrefix + "." + table + ".=")
			m.Header.Set("Content-Type", events.ContentTypeJSON)
			m.Header.Set("Nats-Msg-Id", "snapraw-bad")
			m.Data = []byte(`{"id":"snapraw-bad",`)
			if _, err := e.js.PublishMsg(e.ctx, m); err != nil {
				t.Fatal(err)
			}
			out := e.awaitOutcomes([]string{"snapraw-a", "snapraw-b", "snapraw-c", "snapraw-bad"})
			if o := out["snapraw-bad"]; o.Status != wire.StatusRejected {
				t.Fatalf("raw message: %+v, want rejected", o)
			}
			want := allRows(t, e.ctx, e.st, table)

			var buf bytes.Buffer
			st, err := e.rp.Snapshot(e.ctx, &buf, replay.SnapshotConfig{Table: table, Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			if st.Entities != int64(len(want)) {
				t.Errorf("snapshot holds %d entities, the table %d", st.Entities, len(want))
			}
			into := uniqueTable("Snaprawcopy")
			if _, err := e.rp.Load(e.ctx, &buf, replay.LoadConfig{Into: into}); err != nil {
				t.Fatalf("load: %v", err)
			}
			sameTables(t, "loaded", allRows(t, e.ctx, e.st, into), want)
		})
	}
}

// The empty PartitionKey, which Azure allows, is a partition like any other
// from end to end: published by the writer and by a raw client on the
// subject journal.<table>.=, applied, read alone or with the table, in its
// history, change feed, snapshot, rebuild and restore.
func TestEmptyPartitionKey(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel() // each backend its own pipeline
			e := newEnv(t, b.open(t))
			table := uniqueTable("Emptypk")
			ent := func(n int32) events.Entity { return events.Entity{"n": events.Int32(n)} }
			cmds := []*events.Command{
				{ID: "e1", Table: table, PK: "", Ops: []events.RowOp{{Op: events.OpInsert, RK: "r1", Entity: ent(1)}, {Op: events.OpInsert, RK: "r2", Entity: ent(2)}}},
				{ID: "e2", Table: table, PK: "a", Ops: []events.RowOp{{Op: events.OpInsert, RK: "r1", Entity: ent(3)}}},
				{ID: "e3", Table: table, PK: "", Ops: []events.RowOp{{Op: events.OpDelete, RK: "r2"}}},
			}
			seqs := e.publish(cmds)
			// A client that is not Go: JSON on the empty-key subject.
			m := nats.NewMsg(wire.JournalSubject(table, ""))
			if m.Subject != wire.JournalPrefix+"."+table+".=" {
				t.Fatalf("subject %q", m.Subject)
			}
			m.Header.Set("Content-Type", events.ContentTypeJSON)
			m.Header.Set("Nats-Msg-Id", "e4")
			m.Data = []byte(`{"id":"e4","table":"` + table + `","pk":"","ops":[{"op":"merge","rk":"r1","ifVersion":0,"entity":{"m":true}}]}`)
			ack, err := e.js.PublishMsg(e.ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			out := e.awaitOutcomes([]string{"e1", "e2", "e3", "e4"})
			for id, o := range out {
				if o.Status != wire.StatusApplied || o.PK != map[string]string{"e2": "a"}[id] {
					t.Fatalf("%s: %+v, want applied in its partition", id, o)
				}
			}
			// The stored subject carries the shard and the empty-key token.
			raw, err := e.j.Get(e.ctx, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			if tbl, _, pk, err := wire.ParseJournalSubject(raw.Subject); err != nil || tbl != table || pk != "" {
				t.Fatalf("stored subject %q: %q %q %v", raw.Subject, tbl, pk, err)
			}

			rows := asofRows(t, e.ctx, e.rp, table, store.InPartition(""), ack.Sequence)
			if len(rows) != 1 || rows[key{"", "r1"}].Version != 1 || !rows[key{"", "r1"}].Props["m"].Bool {
				t.Fatalf("partition \"\": %+v, want r1 at version 1", rows)
			}
			if all := asofRows(t, e.ctx, e.rp, table, store.AllPartitions, ack.Sequence); len(all) != 2 {
				t.Fatalf("the table: %d rows, want 2", len(all))
			}
			if at1 := asofRows(t, e.ctx, e.rp, table, store.InPartition(""), seqs[0]); len(at1) != 2 {
				t.Fatalf("partition \"\" after e1: %d rows, want 2", len(at1))
			}
			h, err := e.rp.History(e.ctx, table, "", "r2")
			if err != nil || len(h) != 2 || !h[1].Deleted {
				t.Fatalf("history of \"\"/r2: %+v, %v", h, err)
			}
			s, err := e.js.Stream(e.ctx, wire.ChangesStream)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetLastMsgForSubject(e.ctx, wire.ChangeSubject(table, "")); err != nil {
				t.Fatalf("change feed of partition \"\": %v", err)
			}

			live := allRows(t, e.ctx, e.st, table)
			var buf bytes.Buffer
			if _, err := e.rp.Snapshot(e.ctx, &buf, replay.SnapshotConfig{Table: table, Workers: 4}); err != nil {
				t.Fatal(err)
			}
			loaded := uniqueTable("Emptypkload")
			if _, err := e.rp.Load(e.ctx, &buf, replay.LoadConfig{Into: loaded}); err != nil {
				t.Fatal(err)
			}
			sameTables(t, "loaded", allRows(t, e.ctx, e.st, loaded), live)
			rebuilt := uniqueTable("Emptypkrebuilt")
			if _, err := e.rp.Rebuild(e.ctx, replay.RebuildConfig{Table: table, Into: rebuilt}); err != nil {
				t.Fatal(err)
			}
			sameTables(t, "rebuilt", allRows(t, e.ctx, e.st, rebuilt), live)

			p, err := e.rp.PlanRestore(e.ctx, table, store.InPartition(""), seqs[0])
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
