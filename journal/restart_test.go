package journal_test

import (
	"testing"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

func TestRestartKeepsTheJournal(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "")
	if _, err := w.Publish(e.ctx, command("before", "orders", "pk")); err != nil {
		t.Fatal(err)
	}
	url := e.srv.ClientURL()
	srv := journaltest.Restart(t, e.srv)
	if srv.ClientURL() != url {
		t.Fatalf("restarted on %s, was %s", srv.ClientURL(), url)
	}
	// The client reconnects and the Writer rides over the restart.
	res, err := w.Publish(e.ctx, command("after", "orders", "pk"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq != 2 {
		t.Fatalf("seq after restart %d, want 2", res.Seq)
	}
	if m, err := e.j.Get(e.ctx, 1); err != nil || m.Header.Get("Nats-Msg-Id") != "before" {
		t.Fatalf("Get(1) after restart = %v, %v", m.Header, err)
	}
	// Within the duplicate window, the restarted server still knows the ID.
	if res, err := w.Publish(e.ctx, command("before", "orders", "pk")); err != nil || !res.Duplicate || res.Seq != 1 {
		t.Fatalf("re-publish after restart = %+v, %v, want a duplicate of seq 1", res, err)
	}
	if j, err := journal.Open(e.ctx, e.js, ""); err != nil || j.Shards() != 16 { // the default Config.Shards documents
		t.Fatalf("Open after restart: %v", err)
	}
}
