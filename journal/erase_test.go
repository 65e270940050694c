package journal_test

import (
	"errors"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// With AllowMsgDelete the journal allows deleting single messages (secure
// delete) and still denies purges; Ensure without it then refuses rather
// than turn deny-delete on for good. A journal created without it denies
// deletes.
func TestJournalAllowMsgDelete(t *testing.T) {
	e := newEnv(t, journal.Config{AllowMsgDelete: true})
	w := journal.NewWriter(e.js, "")
	res, err := w.Publish(e.ctx, command("c1", "orders", "p"))
	if err != nil {
		t.Fatal(err)
	}
	er := &events.Erase{ID: "e1", Table: "orders", PK: "p"}
	eres, err := w.PublishErase(e.ctx, er)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.js.Stream(e.ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.DenyDelete || !cfg.DenyPurge || cfg.Metadata[wire.MetadataAllowMsgDelete] != "true" {
		t.Fatalf("deny delete %v, deny purge %v, metadata %v", cfg.DenyDelete, cfg.DenyPurge, cfg.Metadata)
	}
	if err := s.Purge(e.ctx); err == nil {
		t.Error("the journal allowed a purge")
	}
	if err := s.SecureDeleteMsg(e.ctx, res.Seq); err != nil {
		t.Fatalf("secure delete: %v", err)
	}
	if _, err := e.j.Get(e.ctx, res.Seq); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("the deleted command is still there: %v", err)
	}
	m, err := e.j.Get(e.ctx, eres.Seq)
	if err != nil {
		t.Fatal(err)
	}
	got, err := journal.DecodeEraseMsg(m)
	if err != nil || !journal.IsEraseMsg(m.Header) || !got.Equal(er) {
		t.Fatalf("the erase read back: %+v, %v", got, err)
	}
	if _, err := journal.Ensure(e.ctx, e.js, journal.Config{}); !errors.Is(err, journal.ErrStreamConfig) {
		t.Fatalf("Ensure without AllowMsgDelete: %v", err)
	}

	plain := newEnv(t, journal.Config{})
	ps, err := plain.js.Stream(plain.ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	if !ps.CachedInfo().Config.DenyDelete {
		t.Fatal("a journal without AllowMsgDelete allows deleting messages")
	}
	// An invalid erase is refused at the writer, by its rule.
	_, err = w.PublishErase(e.ctx, &events.Erase{ID: "e2", Table: "orders", PK: "a/b"})
	var ve *rules.ValidationError
	if !errors.As(err, &ve) || ve.Rule != rules.KeyForbiddenChar {
		t.Fatalf("invalid erase: %v", err)
	}
}
