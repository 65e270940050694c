package history_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestVersionBySeq: the version a command wrote is read from the version
// row keyed by its sequence, or from the tip when the tip carries it, and
// is not found otherwise, even when the tip exists at another sequence
// (reading by version once returned the tip in its place).
func TestVersionBySeq(t *testing.T) {
	for _, b := range replaytest.Stores() { // point reads only: nothing pages

		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			st := b.Open(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			table := replaytest.UniqueTable("ReadVersion")
			projectiontest.SkipLayoutCheck(t, table) // a history with a version missing, on purpose
			if err := st.CreateTable(ctx, table); err != nil {
				t.Fatal(err)
			}
			// Versions 0 and 2 as version rows, the tip at 3, no version 1.
			var ops []store.Op
			for _, r := range []rows.Row{
				{RK: "r", Version: 0, Cmd: "c0", Seq: 1, Op: events.OpInsert},
				{RK: "r", Version: 2, Cmd: "c2", Seq: 3, Op: events.OpMerge},
				{RK: "r", Version: 3, Cmd: "c3", Seq: 4, Op: events.OpMerge, Tip: true},
			} {
				r.At = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
				r.Props = edm.Entity{"n": edm.Int64(r.Version)}
				ops = append(ops, store.Op{Kind: store.Insert, RK: r.StoreKey(), Props: r.Encode()})
			}
			if _, err := st.Transact(ctx, table, "p", ops); err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				seq     uint64
				wantCmd string // "" wants none
			}{
				{1, "c0"}, {2, ""}, {3, "c2"}, {4, "c3"}, {5, ""},
			}
			for _, tt := range tests {
				row, ok, err := rows.VersionBySeq(ctx, st, table, "p", "r", tt.seq)
				switch {
				case err != nil:
					t.Errorf("seq %d: %v", tt.seq, err)
				case tt.wantCmd == "" && ok:
					t.Errorf("seq %d: got version %d by %q; want none", tt.seq, row.Version, row.Cmd)
				case tt.wantCmd != "" && (!ok || row.Seq != tt.seq || row.Cmd != tt.wantCmd):
					t.Errorf("seq %d: got version %d by %q (%v); want %s", tt.seq, row.Version, row.Cmd, ok, tt.wantCmd)
				}
			}
		})
	}
}

// TestBlameShardOfBadSubject: a message published raw with a partition
// token that does not decode is stored in its shard all the same, and blame
// names that shard (it said 0).
func TestBlameShardOfBadSubject(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Backends()[0].Open(t), replaytest.With(replaytest.History))
	for i := range 20 {
		id := fmt.Sprintf("raw-%d", i)
		msg := nats.NewMsg(fmt.Sprintf("%s.orders.!bad%d", wire.JournalPrefix, i))
		msg.Header.Set(jetstream.MsgIDHeader, id)
		msg.Data = []byte("{}")
		ack, err := e.JS.PublishMsg(e.Ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := e.Journal.Get(e.Ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(stored.Subject, ".")
		if len(parts) != 4 || parts[2] == "0" {
			continue // shard 0 would not show the fault
		}
		if o := e.Await([]string{id})[id]; o.Status != wire.StatusRejected {
			t.Fatalf("outcome %+v, want rejected", o)
		}
		b, err := e.Hist.Blame(e.Ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := strconv.Atoi(parts[2]); b.Shard != want || b.Subject != stored.Subject {
			t.Fatalf("blame: subject %s shard %d, want %s shard %d", b.Subject, b.Shard, stored.Subject, want)
		}
		return
	}
	t.Fatal("no message landed outside shard 0")
}
