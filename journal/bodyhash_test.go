package journal_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// Re-publishing a command ID is fine with the same body (a retry) and an
// error with another one, which JetStream would otherwise drop silently as
// a duplicate: sync and async, and against a message stored by a client
// that sent no body hash.
func TestRepublishDifferentBody(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "")
	c := command("c1", "orders", "p")
	first, err := w.Publish(e.ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.j.Get(e.ctx, first.Seq)
	if err != nil || len(stored.Header.Get(wire.HeaderBodySHA256)) != 64 {
		t.Fatalf("stored %v header %q: want a SHA-256 in %s", err, stored.Header.Get(wire.HeaderBodySHA256), wire.HeaderBodySHA256)
	}
	if r, err := w.Publish(e.ctx, command("c1", "orders", "p")); err != nil || !r.Duplicate || r.Seq != first.Seq {
		t.Fatalf("same body again: %+v, %v; want a duplicate of seq %d", r, err, first.Seq)
	}
	other := command("c1", "orders", "p")
	other.Ops[0].Entity["status"] = edm.String("cancelled")
	wantDiffers := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, journal.ErrBodyDiffers) || !strings.Contains(err.Error(), fmt.Sprintf("command ID c1 is already in the journal with a different body (seq %d)", first.Seq)) {
			t.Fatalf("%s: %v, want ErrBodyDiffers naming seq %d", what, err, first.Seq)
		}
	}
	_, err = w.Publish(e.ctx, other)
	wantDiffers("another body", err)
	f, err := w.PublishAsync(e.ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Result(e.ctx)
	wantDiffers("another body, async", err)
	f, _ = w.PublishAsync(e.ctx, command("c1", "orders", "p"))
	if r, err := f.Result(e.ctx); err != nil || !r.Duplicate {
		t.Fatalf("same body, async: %+v, %v", r, err)
	}
	// Issued again later, the body differs only in issuedAt: the same.
	later := command("c1", "orders", "p")
	later.IssuedAt = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if r, err := w.Publish(e.ctx, later); err != nil || !r.Duplicate {
		t.Fatalf("the same command issued later: %+v, %v; want a duplicate", r, err)
	}
	// In another encoding the bytes differ but the command is the same.
	if r, err := journal.NewWriter(e.js, "", journal.WithContentType(wire.ContentTypeJSON)).Publish(e.ctx, c); err != nil || !r.Duplicate {
		t.Fatalf("the same command as JSON: %+v, %v; want a duplicate", r, err)
	}

	// Stored raw, without the hash: compared by the decoded command.
	m := nats.NewMsg(wire.JournalSubject("orders", "p"))
	m.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
	m.Header.Set(jetstream.MsgIDHeader, "raw-1")
	m.Data = rawJSON("raw-1", "orders", "p")
	if _, err := e.js.PublishMsg(e.ctx, m); err != nil {
		t.Fatal(err)
	}
	same, err := events.UnmarshalJSON(rawJSON("raw-1", "orders", "p"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Publish(e.ctx, same); err != nil || !r.Duplicate {
		t.Fatalf("the raw command again through the Writer: %+v, %v", r, err)
	}
	same.Ops[0].RK = "order-8"
	if _, err := w.Publish(e.ctx, same); !errors.Is(err, journal.ErrBodyDiffers) {
		t.Fatalf("another body under the raw command's ID: %v, want ErrBodyDiffers", err)
	}
}
