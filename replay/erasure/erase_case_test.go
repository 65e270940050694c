package erasure_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestEraseTableSpellings: table names are case-insensitive, and a journal
// or change feed written before subjects carried the table's lower-case
// token holds a table's messages under each spelling its clients used. An
// erase of the key under any spelling removes them from every one.
func TestEraseTableSpellings(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
			ctx := e.Ctx
			table := replaytest.UniqueTable("Erasecase")
			secret := []byte("SECRET-SPELLED-52e1")
			const pk = "cust-1"
			// As clients published before: the table as spelled in the
			// subject, in two spellings.
			var ids []string
			for i, spelled := range []string{table, strings.ToUpper(table)} {
				c := upsert(fmt.Sprintf("old%d", i), spelled, pk, fmt.Sprintf("r%d", i), fmt.Sprintf("%s-old%d", secret, i))
				data, err := events.MarshalMsgpack(c)
				if err != nil {
					t.Fatal(err)
				}
				msg := nats.NewMsg(wire.JournalPrefix + "." + spelled + "." + wire.PKToken(pk))
				msg.Data = data
				msg.Header.Set(jetstream.MsgIDHeader, c.ID)
				if _, err := e.JS.PublishMsg(ctx, msg); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, c.ID)
			}
			// A change event an earlier projector stored under the
			// spelling of its command.
			ev := fmt.Sprintf(`{"table":%q,"pk":%q,"rk":"r0","op":"c","version":0,"cmd":"old0","seq":1,"after":{"v":"%s-event"}}`, table, pk, secret)
			if _, err := e.JS.Publish(ctx, wire.ChangesPrefix+"."+table+"."+wire.PKToken(pk), []byte(ev)); err != nil {
				t.Fatal(err)
			}
			// And one published now, on the lower-case subject.
			now := upsert("new0", table, pk, "r2", fmt.Sprintf("%s-new", secret))
			e.Publish([]*events.Command{now})
			e.Await(append(ids, now.ID))
			if got := journaltest.StreamsHolding(t, ctx, e.JS, secret); len(got) == 0 {
				t.Fatal("no message holds the secret before the erase")
			}

			rec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: strings.ToLower(table), PK: pk}, nil)
			if err != nil {
				t.Fatalf("erase: %v", err)
			}
			if !rec.Verified || rec.Removed.JournalMsgs != 3 || rec.Removed.ChangeEvents != 4 || rec.Removed.Outcomes != 3 {
				t.Errorf("receipt: %+v", rec)
			}
			if got := journaltest.StreamsHolding(t, ctx, e.JS, secret); len(got) != 0 {
				t.Errorf("messages still hold the erased values: %v", got)
			}
			if got := tableHolding(t, ctx, e.Store, table, secret); len(got) != 0 {
				t.Errorf("rows still hold the erased values: %v", got)
			}
		})
	}
}
