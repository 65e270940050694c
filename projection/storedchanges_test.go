package projection

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestStoredChanges: crash recovery of a command older than the change
// stream's duplicate window republishes exactly the change events that are
// not stored. It looks at each row's events, not at the partition's newest
// one: an event lost in flight beside a later event of another row must be
// found missing (a version without its change event, TestChaos under load),
// and the command's own event being the partition's newest must be found
// stored (a second copy of it, TestCrash under load).
func TestStoredChanges(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	if _, err := journal.EnsureChanges(ctx, js, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The change feed of each partition, in stream order: (seq, row).
	feeds := map[string][]struct {
		seq uint64
		rk  string
	}{
		"lost":   {{10, "b"}, {12, "c"}},           // seq 10's event of a was lost
		"newest": {{20, "a"}, {20, "b"}},           // seq 20's events are the newest
		"later":  {{30, "a"}, {40, "a"}},           // seq 30's event of b was lost, a moved on
		"other":  {{5, "a"}, {50, "b"}, {50, "a"}}, // a's event before seq 50 does not count
		"legacy": {{60, "a"}},                      // stored under the table as spelled (below)
	}
	for pk, evs := range feeds {
		part := partition{table: "orders", pk: pk}
		if pk == "legacy" {
			// A projector before the table token was lower case stored
			// the events of table "Orders" under that spelling.
			part.table = "Orders"
		}
		for _, ev := range evs {
			msg, err := changeMsg(part, Result{ID: fmt.Sprint("cmd-", ev.seq), Seq: ev.seq}, Change{RK: ev.rk, Kind: wire.ChangeUpdate, Version: int64(ev.seq)}, start)
			if err != nil {
				t.Fatal(err)
			}
			if part.table != "orders" {
				msg.Subject = wire.ChangesPrefix + "." + part.table + "." + wire.PKToken(pk)
			}
			if _, err := js.PublishMsg(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		pk   string
		seq  uint64
		rks  []string
		want string
	}{
		{"lost", 10, []string{"a", "b"}, "map[b:true]"},
		{"newest", 20, []string{"a", "b"}, "map[a:true b:true]"},
		{"later", 30, []string{"a", "b"}, "map[a:true]"},
		{"other", 40, []string{"a"}, "map[a:true]"},
		{"other", 60, []string{"a"}, "map[]"},
		{"none", 1, []string{"a"}, "map[]"},
		{"legacy", 60, []string{"a"}, "map[a:true]"},
	}
	for _, tt := range tests {
		table := "orders"
		if tt.pk == "legacy" {
			table = "Orders"
		}
		got, err := storedChanges(ctx, js, partition{table: table, pk: tt.pk}, tt.seq, start, tt.rks)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != tt.want {
			t.Errorf("%s, seq %d, rows %v: stored %v, want %s", tt.pk, tt.seq, tt.rks, got, tt.want)
		}
	}
}
