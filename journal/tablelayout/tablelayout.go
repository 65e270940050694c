package tablelayout

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// Layout settings (SPEC §3, "A table's layout setting"; issue 38): the
// first message on wire.LayoutSubject(table) is the table's setting, and
// holds only when it comes before the table's first command.
var (
	// ErrSet is a table whose layout is set already (to another
	// layout: setting the same one again is not an error).
	ErrSet = errors.New("the table's layout is set already")
	// ErrTableHasCommands is a table with commands in the journal: its
	// layout can no longer be set (rebuild it --into a new table set
	// first).
	ErrTableHasCommands = errors.New("the table already has commands")
	// ErrNoSubject is a journal stream that does not carry layout
	// settings: made before they existed, and not upgraded by Ensure.
	ErrNoSubject = errors.New("the journal does not carry table layout settings")
)

// Setting is a table's layout as the journal decides it.
type Setting struct {
	Layout wire.Layout
	// Seq is the sequence of the setting that holds; 0 when none does
	// (the table is versioned).
	Seq uint64
	// Ignored, when not empty, says why a setting found does not hold.
	Ignored string
}

// Of reads table's layout from the journal j: its first layout setting,
// if it comes before the table's first command, else LayoutVersioned. Once
// the table has a command the answer never changes, so a caller may cache
// it. The projector and a rebuild decide with it alike.
func Of(ctx context.Context, j *journal.Journal, table string) (Setting, error) {
	tl := Setting{Layout: wire.LayoutVersioned}
	m, err := firstOn(ctx, j, wire.LayoutSubject(table))
	if err != nil || m == nil {
		return tl, err
	}
	set, err := wire.DecodeLayoutSetting(m.Data)
	if err != nil {
		tl.Ignored = fmt.Sprintf("the setting at sequence %d does not decode: %v", m.Seq, err)
		return tl, nil
	}
	first, err := firstCommand(ctx, j, table)
	if err != nil {
		return tl, err
	}
	if first != 0 && first < m.Seq {
		tl.Ignored = fmt.Sprintf("the setting at sequence %d comes after the table's first command, at %d", m.Seq, first)
		return tl, nil
	}
	tl.Layout, tl.Seq = set.Layout, m.Seq
	return tl, nil
}

// Set sets table's layout in journal j (SPEC §3): it publishes the setting, once,
// before the table's first command. It refuses a table that has commands
// (ErrTableHasCommands), one set to another layout (ErrSet), a plain
// table whose history table's name is not valid (wire.ErrHistoryName) or
// that has commands itself, and a journal that does not carry settings
// (ErrNoSubject). Setting the layout a table has is not an error. It
// returns the setting's journal sequence.
func Set(ctx context.Context, j *journal.Journal, table string, l wire.Layout) (uint64, error) {
	if err := events.ValidateTable(table); err != nil {
		return 0, err
	}
	if _, err := wire.ParseLayout(string(l)); err != nil || l == "" {
		return 0, fmt.Errorf("set layout of %s: %w", table, err)
	}
	stream, err := j.JetStream().Stream(ctx, j.Name())
	if err != nil {
		return 0, fmt.Errorf("set layout of %s: %w", table, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("set layout of %s: %w", table, err)
	}
	if !slices.Contains(info.Config.Subjects, wire.LayoutSubjects) {
		return 0, fmt.Errorf("set layout of %s: %w: stream %s has no subject %s; upgrade it: every projector must run a version that knows layouts, and any of them, starting, adds the subject",
			table, ErrNoSubject, j.Name(), wire.LayoutSubjects)
	}
	have, err := Of(ctx, j, table)
	if err != nil {
		return 0, err
	}
	if have.Seq != 0 {
		if have.Layout == l {
			return have.Seq, nil
		}
		return 0, fmt.Errorf("set layout of %s to %s: %w: %s since sequence %d; changing it is a rebuild --into a new table",
			table, l, ErrSet, have.Layout, have.Seq)
	}
	check := []string{table}
	if l == wire.LayoutPlain {
		h, err := wire.HistoryTable(table)
		if err != nil {
			return 0, err
		}
		check = append(check, h)
	}
	for _, t := range check {
		first, err := firstCommand(ctx, j, t)
		if err != nil {
			return 0, err
		}
		if first != 0 {
			return 0, fmt.Errorf("set layout of %s to %s: %w: table %s has a command at sequence %d; a layout is set before the first command (to change it, rebuild --into a new table and set that one first)",
				table, l, ErrTableHasCommands, t, first)
		}
	}
	msg := &nats.Msg{Subject: wire.LayoutSubject(table), Header: nats.Header{},
		Data: wire.LayoutSetting{Table: table, Layout: l}.Encode()}
	msg.Header.Set(jetstream.MsgIDHeader, "tablejournal-layout-"+wire.TableToken(table)+"-"+string(l))
	// Only the first setting of a table counts: the stream refuses a second.
	ack, err := j.JetStream().PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0))
	if err != nil {
		if again, lerr := Of(ctx, j, table); lerr == nil && again.Seq != 0 {
			if again.Layout == l {
				return again.Seq, nil
			}
			return 0, fmt.Errorf("set layout of %s to %s: %w: %s since sequence %d", table, l, ErrSet, again.Layout, again.Seq)
		} else if lerr == nil && again.Ignored != "" {
			// Only a table's first setting counts, and its is void.
			return 0, fmt.Errorf("set layout of %s to %s: %w, and does not hold (%s): the table is versioned; to change it, rebuild --into a new table",
				table, l, ErrSet, again.Ignored)
		}
		return 0, fmt.Errorf("set layout of %s: publish: %w", table, err)
	}
	// A command published meanwhile may have come first: then the setting
	// does not hold, for anyone.
	got, err := Of(ctx, j, table)
	if err != nil {
		return 0, err
	}
	if got.Seq != ack.Sequence {
		return 0, fmt.Errorf("set layout of %s to %s: %w: %s", table, l, ErrTableHasCommands, got.Ignored)
	}
	return ack.Sequence, nil
}

// firstOn returns the first message on subject (a filter), nil if none.
// It asks the stream's leader (jsapi.LeaderGet): a replica or a mirror answering
// a direct get may lag, and a setting it has not yet would read as none.
func firstOn(ctx context.Context, j *journal.Journal, subject string) (*jsapi.Msg, error) {
	m, err := jsapi.LeaderGet(ctx, j.JetStream(), j.Name(), jsapi.MsgGetReq{Seq: 1, NextFor: subject})
	switch {
	case errors.Is(err, journal.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s of stream %s: %w", subject, j.Name(), err)
	}
	return &m, nil
}

// firstCommand is the sequence of table's first command (under its token
// or, for a journal written before the token, its spelling); 0 if none.
func firstCommand(ctx context.Context, j *journal.Journal, table string) (uint64, error) {
	var first uint64
	for _, f := range wire.TableFilters(table) {
		m, err := firstOn(ctx, j, f)
		if err != nil {
			return 0, err
		}
		if m != nil && (first == 0 || m.Seq < first) {
			first = m.Seq
		}
	}
	return first, nil
}

// Settings returns the sequences of every layout setting message in
// journal j, in order: messages that are no command and get no outcome.
func Settings(ctx context.Context, j *journal.Journal) ([]uint64, error) {
	var seqs []uint64
	for from := uint64(1); ; {
		m, err := jsapi.LeaderGet(ctx, j.JetStream(), j.Name(), jsapi.MsgGetReq{Seq: from, NextFor: wire.LayoutSubjects})
		switch {
		case errors.Is(err, journal.ErrNotFound):
			return seqs, nil
		case err != nil:
			return nil, fmt.Errorf("read %s of stream %s: %w", wire.LayoutSubjects, j.Name(), err)
		}
		seqs = append(seqs, m.Seq)
		from = m.Seq + 1
	}
}
