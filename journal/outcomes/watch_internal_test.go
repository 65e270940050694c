package outcomes

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestWatchFindsMissedOutcome: core NATS delivers at most once, so an
// outcome the subscription never got (a reconnection, a route that learned
// of the subscription late) is found by the look-up Await makes after its
// first pause, well within a second.
func TestWatchFindsMissedOutcome(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, 30*time.Second)
	if _, err := Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	want := wire.Outcome{ID: "missed", Seq: 5, Table: "t", PK: "p", Status: wire.StatusApplied,
		At: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)}
	w, err := NewReader(js).Watch(want.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The subscriptions lose the outcome (and no reply comes).
	for _, sub := range w.subs {
		if err := sub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := PublishOutcome(ctx, js, want); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 2*recheckFirst)
	defer cancel()
	got, err := w.Await(actx, want.Seq, false)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Await = %+v, %v, want %+v", got, err, want)
	}
}
