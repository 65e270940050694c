package journal_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// The journal is created refusing message deletes and purges, with a
// description; with AllowTrim it allows both and records that.
func TestJournalDeniesTrimming(t *testing.T) {
	for _, allow := range []bool{false, true} {
		e := newEnv(t, journal.Config{AllowTrim: allow})
		if _, err := journal.NewWriter(e.js, "").Publish(e.ctx, command("c1", "orders", "p")); err != nil {
			t.Fatal(err)
		}
		s, err := e.js.Stream(e.ctx, wire.JournalStream)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		if cfg.DenyDelete == allow || cfg.DenyPurge == allow || cfg.Description == "" || (cfg.Metadata[wire.MetadataAllowTrim] == "true") != allow {
			t.Fatalf("AllowTrim %v: deny delete %v, deny purge %v, description %q, metadata %v", allow, cfg.DenyDelete, cfg.DenyPurge, cfg.Description, cfg.Metadata)
		}
		delErr, purgeErr := s.DeleteMsg(e.ctx, 1), s.Purge(e.ctx)
		if (delErr == nil) != allow || (purgeErr == nil) != allow {
			t.Errorf("AllowTrim %v: delete %v, purge %v", allow, delErr, purgeErr)
		}
	}
}

// An existing journal is brought to the configuration where JetStream
// allows it, and every change is reported; what cannot change is a clear
// error; an operator's own settings the config does not name are kept.
func TestEnsureExistingJournal(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)

	// A journal made before deny flags and descriptions: trimming allowed,
	// nothing recorded, and an operator's 10-minute duplicate window.
	if _, err := journal.Ensure(ctx, js, journal.Config{AllowTrim: true}); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, wire.JournalStream)
	legacy := s.CachedInfo().Config
	delete(legacy.Metadata, wire.MetadataAllowTrim)
	legacy.Description, legacy.Duplicates = "tablejournal command journal", 10*time.Minute
	if _, err := js.UpdateStream(ctx, legacy); err != nil {
		t.Fatal(err)
	}

	j, err := journal.Ensure(ctx, js, journal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	changes := strings.Join(j.Changes(), "; ")
	for _, want := range []string{"description", "deny message deletes false → true", "deny purges false → true"} {
		if !strings.Contains(changes, want) {
			t.Errorf("changes %q do not say %q", changes, want)
		}
	}
	s, _ = js.Stream(ctx, wire.JournalStream)
	if cfg := s.CachedInfo().Config; !cfg.DenyDelete || !cfg.DenyPurge || cfg.Duplicates != 10*time.Minute {
		t.Fatalf("after Ensure: deny %v/%v, duplicates %v (the operator's 10m kept)", cfg.DenyDelete, cfg.DenyPurge, cfg.Duplicates)
	}
	if j, err := journal.Ensure(ctx, js, journal.Config{}); err != nil || j.Changes() != nil {
		t.Fatalf("again: %v, changes %q", err, j.Changes())
	}
	j, err = journal.Ensure(ctx, js, journal.Config{Duplicates: 5 * time.Minute})
	if err != nil || len(j.Changes()) != 1 || !strings.Contains(j.Changes()[0], "duplicate window 10m0s → 5m0s") {
		t.Fatalf("a configured duplicate window: %v, changes %q", err, j.Changes())
	}
	_, err = journal.Ensure(ctx, js, journal.Config{AllowTrim: true})
	if !errors.Is(err, journal.ErrStreamConfig) || !strings.Contains(err.Error(), "cannot lift") {
		t.Fatalf("allowing trimming on a journal that denies it: %v, want ErrStreamConfig", err)
	}

	// A journal created to allow trimming is not denied by a start that
	// forgot the flag: that could never be undone.
	_, js2 := journaltest.Connect(t, journaltest.StartServer(t).ClientURL())
	if _, err := journal.Ensure(ctx, js2, journal.Config{AllowTrim: true}); err != nil {
		t.Fatal(err)
	}
	_, err = journal.Ensure(ctx, js2, journal.Config{})
	if !errors.Is(err, journal.ErrStreamConfig) || !strings.Contains(err.Error(), "--journal-allow-trim") {
		t.Fatalf("denying a journal created to allow trimming: %v, want ErrStreamConfig", err)
	}
}
