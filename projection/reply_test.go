package projection

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// TestReplyBeforeStoredOutcome: a client waiting for an applied command
// learns its outcome from the projector's reply, sent once the transaction
// committed, while the durable record (change events, then the stored
// outcome) cannot be written: the reply does not wait for it. With replies
// off (the previous release), the same wait gets nothing until the outcome
// is stored. SPEC §5, "The reply before the durable record".
func TestReplyBeforeStoredOutcome(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noReply bool
	}{{"reply", false}, {"no reply", true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := journaltest.StartServer(t)
			_, js := journaltest.Connect(t, srv.ClientURL())
			ctx := journaltest.Context(t, time.Minute)
			if _, err := journal.EnsureChanges(ctx, js, 0); err != nil {
				t.Fatal(err)
			}
			stream, err := outcomes.Ensure(ctx, js)
			if err != nil {
				t.Fatal(err)
			}
			reader := outcomes.NewReader(js)
			w, err := reader.Watch("c1")
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			// c1's change event cannot be stored: its outcome must not be.
			failing := failingJS{JetStream: js, marker: `"cmd":"c1"`}
			b := &batch{p: &Projector{obs: NopObserver{}, log: slog.New(slog.DiscardHandler)}, bySeq: make(map[uint64]*Entry),
				outcomes: newOutcomePublisher(failing, NopObserver{}), changes: newChangeFeed(failing)}
			b.outcomes.noReply = tc.noReply
			r := Result{Seq: 7, ID: "c1", Status: wire.StatusApplied,
				Rows:    []wire.RowVersion{{RK: "r", Version: 0, Op: events.OpUpsert}},
				Changes: []Change{{RK: "r", Kind: wire.ChangeCreate, Version: 0, After: edm.Entity{"n": edm.Int64(1)}}}}
			b.bySeq[r.Seq] = &Entry{Seq: r.Seq, ID: r.ID}
			part := partition{table: "orders", pk: "p"}
			if err := b.publishApplied(ctx, part, []Result{r}); err != nil {
				t.Fatal(err)
			}
			if err := b.finish(ctx); !errors.Is(err, errUnreachable) {
				t.Fatalf("finish: %v, want the change event's failure", err)
			}

			wait := ctx
			if tc.noReply {
				// Nothing is stored, so nothing can come: the wait ends
				// with its deadline.
				wait = journaltest.Context(t, 300*time.Millisecond)
			}
			got, err := w.Await(wait, r.Seq, false)
			switch {
			case tc.noReply && err == nil:
				t.Fatalf("with replies off, the wait got %+v though no outcome is stored", got)
			case tc.noReply:
			case err != nil:
				t.Fatalf("await the reply: %v", err)
			case got.ID != "c1" || got.Seq != 7 || got.Status != wire.StatusApplied || len(got.Rows) != 1 || got.Table != "orders" || got.PK != "p":
				t.Errorf("reply %+v, want c1's applied outcome of seq 7 with its row", got)
			}
			info, err := stream.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != 0 {
				t.Errorf("%d outcomes stored, want none: c1's change event is not", info.State.Msgs)
			}
		})
	}
}
