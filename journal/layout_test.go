package journal_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// TestSetLayout sets a table plain before its first command: the setting
// holds, setting it again is idempotent, another layout is refused, and
// a table with commands cannot be set.
func TestSetLayout(t *testing.T) {
	e := newEnv(t, journal.Config{})
	seq, err := tablelayout.Set(e.ctx, e.j, "Orders", wire.LayoutPlain)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := tablelayout.Set(e.ctx, e.j, "orders", wire.LayoutPlain); err != nil || again != seq {
		t.Fatalf("setting the same layout again: %d, %v; want %d", again, err, seq)
	}
	if _, err := tablelayout.Set(e.ctx, e.j, "orders", wire.LayoutVersioned); !errors.Is(err, tablelayout.ErrSet) {
		t.Fatalf("another layout: %v, want ErrSet", err)
	}
	w := journal.NewWriter(e.js, e.j.Name())
	if _, err := w.Publish(e.ctx, command("c-1", "orders", "p")); err != nil {
		t.Fatal(err)
	}
	tl, err := tablelayout.Of(e.ctx, e.j, "ORDERS")
	if err != nil || tl.Layout != wire.LayoutPlain || tl.Seq != seq || tl.Ignored != "" {
		t.Fatalf("Layout = %+v, %v; want plain at %d", tl, err, seq)
	}

	if _, err := w.Publish(e.ctx, command("c-2", "customers", "p")); err != nil {
		t.Fatal(err)
	}
	_, err = tablelayout.Set(e.ctx, e.j, "customers", wire.LayoutPlain)
	if !errors.Is(err, tablelayout.ErrTableHasCommands) || !strings.Contains(err.Error(), "rebuild --into") {
		t.Fatalf("a table with commands: %v, want ErrTableHasCommands saying how to change it", err)
	}
	if tl, err := tablelayout.Of(e.ctx, e.j, "customers"); err != nil || tl.Layout != wire.LayoutVersioned || tl.Seq != 0 {
		t.Fatalf("Layout of a table never set = %+v, %v; want versioned", tl, err)
	}
	// A table whose history table already has commands is refused too.
	if _, err := w.Publish(e.ctx, command("c-3", "invoicesHistory", "p")); err != nil {
		t.Fatal(err)
	}
	if _, err := tablelayout.Set(e.ctx, e.j, "invoices", wire.LayoutPlain); !errors.Is(err, tablelayout.ErrTableHasCommands) {
		t.Fatalf("history table with commands: %v, want ErrTableHasCommands", err)
	}
	// A name whose history name would be too long for a table.
	long := "a" + strings.Repeat("b", 56)
	if _, err := tablelayout.Set(e.ctx, e.j, long, wire.LayoutPlain); !errors.Is(err, wire.ErrHistoryName) {
		t.Fatalf("a 57-character table: %v, want ErrHistoryName", err)
	}
	if _, err := tablelayout.Set(e.ctx, e.j, long[:56], wire.LayoutPlain); err != nil {
		t.Fatalf("a 56-character table: %v", err)
	}
	if got, err := tablelayout.Settings(e.ctx, e.j); err != nil || len(got) != 2 {
		t.Fatalf("Settings = %v, %v; want the two settings", got, err)
	}
}

// TestLayoutAfterFirstCommandIgnored publishes a setting by hand, as a
// client that skipped SetLayout's check would, after the table's first
// command: every reader ignores it, and says why. A second setting of a
// table is refused by the stream.
func TestLayoutAfterFirstCommandIgnored(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, e.j.Name())
	first, err := w.Publish(e.ctx, command("c-1", "orders", "p"))
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: wire.LayoutSubject("orders"), Data: wire.LayoutSetting{Table: "orders", Layout: wire.LayoutPlain}.Encode()}
	ack, err := e.js.PublishMsg(e.ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tablelayout.Of(e.ctx, e.j, "orders")
	if err != nil || tl.Layout != wire.LayoutVersioned || tl.Seq != 0 || !strings.Contains(tl.Ignored, "after the table's first command") {
		t.Fatalf("Layout = %+v, %v; want versioned, the setting at %d after the command at %d ignored", tl, err, ack.Sequence, first.Seq)
	}
	// The setting is no command: a reader of every command skips it.
	var seqs []uint64
	if err := e.j.Read(e.ctx, 1, 0, "", func(m journal.Msg) error { seqs = append(seqs, m.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs, []uint64{first.Seq}) {
		t.Fatalf("Read of every command gave %v, want [%d]", seqs, first.Seq)
	}
	// An undecodable setting sets nothing.
	e2 := newEnv(t, journal.Config{})
	if _, err := e2.js.PublishMsg(e2.ctx, &nats.Msg{Subject: wire.LayoutSubject("orders"), Data: []byte(`{"layout":"sideways"}`)}); err != nil {
		t.Fatal(err)
	}
	if tl, err := tablelayout.Of(e2.ctx, e2.j, "orders"); err != nil || tl.Layout != wire.LayoutVersioned || tl.Ignored == "" {
		t.Fatalf("Layout with a bad setting = %+v, %v; want versioned, ignored", tl, err)
	}
	if _, err := tablelayout.Set(e2.ctx, e2.j, "orders", wire.LayoutPlain); !errors.Is(err, tablelayout.ErrSet) {
		t.Fatal("SetLayout after a bad first setting succeeded: the first setting is the table's, so it must be refused")
	}
}

// TestEnsureAddsLayoutSubject upgrades a journal made before layouts (its
// only subject the commands'): SetLayout refuses it, naming the upgrade;
// Ensure adds the subject, keeps the commands, and reports the change.
func TestEnsureAddsLayoutSubject(t *testing.T) {
	e := newEnv(t, journal.Config{})
	s, err := e.js.Stream(e.ctx, e.j.Name())
	if err != nil {
		t.Fatal(err)
	}
	old := s.CachedInfo().Config
	old.Subjects = []string{wire.JournalPrefix + ".*.*"}
	if _, err := e.js.UpdateStream(e.ctx, old); err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter(e.js, e.j.Name())
	if _, err := w.Publish(e.ctx, command("c-1", "orders", "p")); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(e.ctx, e.js, e.j.Name())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablelayout.Set(e.ctx, j, "fresh", wire.LayoutPlain); !errors.Is(err, tablelayout.ErrNoSubject) || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("SetLayout on an old journal: %v, want ErrNoSubject naming the upgrade", err)
	}
	if tl, err := tablelayout.Of(e.ctx, j, "orders"); err != nil || tl.Layout != wire.LayoutVersioned {
		t.Fatalf("Layout on an old journal = %+v, %v; want versioned", tl, err)
	}
	up, err := journal.Ensure(e.ctx, e.js, journal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(up.Changes(), func(c string) bool { return strings.Contains(c, wire.LayoutSubjects) }) {
		t.Fatalf("Ensure changes %v: want the subject %s added", up.Changes(), wire.LayoutSubjects)
	}
	if _, err := tablelayout.Set(e.ctx, up, "fresh", wire.LayoutPlain); err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("journal holds %d messages after the upgrade, want the command and the setting", info.State.Msgs)
	}
	if again, err := journal.Ensure(e.ctx, e.js, journal.Config{}); err != nil || len(again.Changes()) != 0 {
		t.Fatalf("Ensure again: changes %v, %v; want none", again.Changes(), err)
	}
}
