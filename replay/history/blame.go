package history

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

// Blame is what one command did: its outcome, its place in the journal and
// the row versions it produced.
type Blame struct {
	// Outcome is the command's outcome: the applied one if it was ever
	// applied, else the latest.
	Outcome wire.Outcome
	// Subject and Shard locate the command in the journal; Time is its
	// journal time. They are empty if the message is no longer stored;
	// Shard is -1 if the subject has no shard.
	Subject string
	Shard   int
	Time    time.Time
	// Command is the decoded command; nil if the message is gone or does
	// not decode (DecodeErr says why).
	Command   *events.Command
	DecodeErr string
	// Versions are the stored versions the command produced, one per row,
	// in the order the command first names the rows (found by
	// rows.RowsBySeq: point reads by the command's sequence).
	Versions []rows.Row
}

// Blame finds what command id did.
func (r *Reader) Blame(ctx context.Context, id string) (*Blame, error) {
	o, err := r.Outcome(ctx, id)
	if err != nil {
		return nil, err
	}
	b := &Blame{Outcome: o}
	m, err := r.Journal().Get(ctx, o.Seq)
	switch {
	case errors.Is(err, journal.ErrNotFound):
		b.DecodeErr = fmt.Sprintf("journal message %d is no longer stored", o.Seq)
		return b, nil
	case err != nil:
		return nil, err
	}
	b.Subject, b.Time, b.Shard = m.Subject, m.Time, subjectShard(m.Subject)
	if note, ok := eraseNote(m); ok {
		b.DecodeErr = note // an erase: no command, no versions
		return b, nil
	}
	cmd, err := journal.DecodeMsg(m)
	if err != nil {
		b.DecodeErr = err.Error()
		return b, nil
	}
	b.Command = cmd
	if o.Status != wire.StatusApplied {
		return b, nil
	}
	if err := r.erasedRows(ctx, o); err != nil {
		return nil, fmt.Errorf("blame %s: %w", id, err)
	}
	vt, err := r.VersionTable(ctx, o.Table)
	if err != nil {
		return nil, fmt.Errorf("blame %s: %w", id, err)
	}
	if err := replay.CheckPruned(ctx, r.Store(), vt, o.PK, o.Seq); err != nil {
		return nil, fmt.Errorf("blame %s: %w", id, replay.Logical(err, o.Table)) // pruned (prune.go)
	}
	if b.Versions, err = rows.RowsBySeq(ctx, r.Store(), vt, o.PK, cmd, o.Seq); err != nil {
		return nil, fmt.Errorf("blame %s: %w", id, err)
	}
	return b, nil
}

// subjectShard returns the shard of a stored subject
// journal.<table>.<shard>.<pk-token>, even when the rest does not parse (a
// message published raw with a bad partition token is stored in its shard
// all the same), or -1 if it has none.
func subjectShard(subject string) int {
	if _, shard, _, err := wire.ParseJournalSubject(subject); err == nil {
		return shard
	}
	parts := strings.Split(subject, ".")
	if len(parts) == 4 && parts[0] == wire.JournalPrefix {
		if n, err := strconv.Atoi(parts[2]); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}
