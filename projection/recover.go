package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Crash recovery, the stage between deciding a transaction and publishing
// the outcomes that precede its commit (batch.go, publish.go), with every
// read it makes of the table and the change feed: a redelivered command
// whose effect is already in the table (Skipped) gets the outcome it had,
// found in the outcomes stream or rebuilt from the table, so that no
// message is acknowledged without an outcome.

// recover settles the skipped results among rs whose outcome is not known
// to be stored.
func (b *batch) recover(ctx context.Context, part partition, rs []Result) error {
	for i := range rs {
		if r := &rs[i]; r.Status == Skipped && !r.Stored {
			if err := b.p.recoverOutcome(ctx, part, r, b.entries[part]); err != nil {
				return err
			}
		}
	}
	return nil
}

// recoverOutcome settles a redelivered command whose effect is already in
// the table and whose outcome is not known to be stored: it sets r's
// Status (and Rows, Changes) to the outcome to publish, or marks it Stored.
// It never leaves r without an outcome.
//
// If the projector crashed between a commit and publishing the outcomes,
// the outcome of an applied command is rebuilt from the version rows that
// carry its sequence. A command that wrote nothing had its outcome
// published before any later commit (publishUnwritten), so it is found in
// the outcomes stream. If it is not, the table (or the outcomes stream)
// lost what the projector wrote: that is logged at ERROR and counted, and
// the outcome is rebuilt from the rows' history as they stood before the
// command.
func (p *Projector) recoverOutcome(ctx context.Context, part partition, r *Result, entries []Entry) error {
	var e Entry
	for _, x := range entries {
		if x.Seq == r.Seq {
			e = x
		}
	}
	found, err := p.storedOutcome(ctx, r, e)
	if err != nil || found || recoverErased(r, e) {
		return err
	}
	if e.Cmd == nil {
		// Only valid commands can be skipped; an invalid one is rejected
		// again on the message alone.
		r.reject(fmt.Sprint(e.Err), e.Err)
		return nil
	}
	rows, err := retryStore(ctx, p.applier.policy, "read versions of "+part.table, func() ([]wire.RowVersion, error) {
		return versionsBySeq(ctx, p.store, part.table, part.pk, e.Cmd, r.Seq)
	})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return p.outcomeFromHistory(ctx, part, r, e)
	}
	r.Status, r.Rows = wire.StatusApplied, rows
	return p.recoverChanges(ctx, part, r, e)
}

// storedOutcome looks for the outcome of e in the outcomes stream (or in
// what the batch's look-up found) and, when it is there, marks r Stored
// with it.
func (p *Projector) storedOutcome(ctx context.Context, r *Result, e Entry) (bool, error) {
	if e.own != nil {
		// The batch's look-up found it.
		r.Status, r.Reason, r.Stored = e.own.Status, e.own.Reason, true
		return true, nil
	}
	o, err := p.outcomeReader().Latest(ctx, r.ID)
	switch {
	case errors.Is(err, journal.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("%w: %w", ErrPublish, err)
	case o.Seq == r.Seq:
		r.Status, r.Reason, r.Stored = o.Status, o.Reason, true
		return true, nil
	}
	// The ID has outcomes of other messages (the latest in the stream is
	// not necessarily the newest in the journal: rejections and duplicates
	// are published before the applied outcomes of their batch): look
	// through all of them.
	all, err := p.outcomeReader().History(ctx, r.ID)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrPublish, err)
	}
	for _, o := range all {
		if o.Seq == r.Seq {
			r.Status, r.Reason, r.Stored = o.Status, o.Reason, true
			return true, nil
		}
	}
	return false, nil
}

// recoverErased settles the outcome of a result skipped because an erase
// came after it, when its outcome is not in the outcomes stream: a
// rejection's outcome is stored before any later commit, so it applied,
// and the rows that would say what it wrote are erased.
func recoverErased(r *Result, e Entry) bool {
	if !r.erased && e.Erase == nil {
		return false
	}
	r.Status, r.Rows, r.Changes = wire.StatusApplied, nil, eraseNotice(e)
	return true
}

// versionsBySeq finds the versions a command (at journal sequence seq)
// produced on the rows it names; see RowsBySeq.
func versionsBySeq(ctx context.Context, s store.Store, table, pk string, cmd *events.Command, seq uint64) ([]wire.RowVersion, error) {
	versions, err := rows.RowsBySeq(ctx, s, table, pk, cmd, seq)
	out := make([]wire.RowVersion, len(versions))
	for i, row := range versions {
		out[i] = wire.RowVersion{RK: row.RK, Version: row.Version, Op: row.Op, Deleted: row.Deleted}
	}
	return out, err
}

// outcomeFromHistory settles a skipped command that has neither an outcome
// nor a version in the table, which the projector never leaves behind: it
// evaluates the command again on its rows as they stood just before it, as
// the version rows tell. If that says the command applied, the table lost
// its effect, and the outcome says so as a rejection (nothing of it is in
// the table).
func (p *Projector) outcomeFromHistory(ctx context.Context, part partition, r *Result, e Entry) error {
	state := make(map[string]*rowState)
	for _, rk := range touchedRKs([]Entry{e}) {
		s, err := retryStore(ctx, p.applier.policy, "read history of "+part.table, func() (*rowState, error) {
			return stateBefore(ctx, p.store, part.table, part.pk, rk, e.Seq)
		})
		if err != nil {
			return err
		}
		state[rk] = s
	}
	b := newTxn(part.pk, state, p.store.Limits())
	if err := b.add(e); err != nil {
		return err
	}
	res := b.results[0]
	if res.Status == wire.StatusApplied && len(res.Rows) == 0 {
		// It applied and changed nothing (it inserted and deleted a row):
		// no version to find, and its outcome is published after the
		// commit of its batch, so a crash may lose it. Nothing disagrees.
		*r = res
		return nil
	}
	if res.Status == wire.StatusApplied {
		res = Result{Seq: e.Seq, ID: e.ID, Status: wire.StatusRejected, Code: wire.CodeLostWrite,
			Reason: "not in the table: the rows moved on past this command, but no version carries it (the store lost a confirmed write?)"}
	}
	p.applier.disagree(part.table, part.pk,
		fmt.Sprintf("seq %d (command %s) was handled but has no outcome and no version; outcome rebuilt from the rows' history: %s", e.Seq, e.ID, res.Status),
		errors.New("outcome missing"))
	*r = res
	return nil
}

// stateBefore reads the state of a row just before journal sequence seq
// from its tip and history.
func stateBefore(ctx context.Context, s store.Store, table, pk, rk string, seq uint64) (*rowState, error) {
	var newest *rows.Row
	if tip, err := (rows.Reader{Store: s}).Get(ctx, table, pk, rk); err == nil && tip.Seq < seq {
		newest = &tip
	} else if err != nil && !errors.Is(err, rows.ErrRowNotFound) {
		return nil, err
	}
	if newest == nil && seq > 0 {
		// Version rows are keyed by sequence: the newest before seq is the
		// first row at or after the key of seq-1, read without a scan.
		r, ok, err := rows.VersionAt(ctx, s, table, pk, rk, seq-1)
		if err != nil && !errors.Is(err, store.ErrTableNotFound) {
			return nil, err
		}
		if ok {
			newest = &r
		}
	}
	if newest == nil {
		return &rowState{}, nil
	}
	if newest.Deleted {
		return &rowState{Latest: newest}, nil
	}
	t := *newest
	t.Tip, t.ETag = true, ""
	return &rowState{Tip: &t, Latest: &t}, nil
}

// recoverChanges rebuilds the change events of a recovered applied command
// from the version rows, to be published again: those not already stored.
//
// A command journaled less than changeRepublishAge ago has all its events
// published again: one already stored is deduplicated by its Nats-Msg-Id
// within the stream's 2-minute duplicate window. An older command's events
// are looked up in the change feed (storedChanges), and only the rows
// without one are published: after the window a republished event would be
// stored twice, and a guess from the partition's newest event alone is wrong
// both ways (an event lost in flight beside a later one of another row, or
// the command's own event being the newest). The result does not depend on
// how long recovery took.
func (p *Projector) recoverChanges(ctx context.Context, part partition, r *Result, e Entry) error {
	if p.cfg.NoChangeFeed {
		return nil
	}
	changes, err := retryStore(ctx, p.applier.policy, "read versions of "+part.table, func() ([]Change, error) {
		return changesOf(ctx, p.store, part.table, part.pk, r.Seq, r.Rows)
	})
	if err != nil {
		if ctx.Err() != nil {
			// Stopped (a drain that timed out, a lost lease), not a
			// missing version: an outcome sent now would be stored without
			// the events it stands for.
			return ctx.Err()
		}
		p.applier.disagree(part.table, part.pk, fmt.Sprintf("a version before those of seq %d (command %s) is missing", r.Seq, r.ID), err)
		return nil
	}
	if time.Since(e.At) > changeRepublishAge {
		rks := make([]string, len(changes))
		for i, c := range changes {
			rks[i] = c.RK
		}
		stored, err := storedChanges(ctx, p.js, part, r.Seq, e.At, rks)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrPublish, err)
		}
		changes = slices.DeleteFunc(changes, func(c Change) bool { return stored[c.RK] })
	}
	r.Changes = changes
	return nil
}

// changeRepublishAge is how old (by journal time) a recovered command may
// be for its change events to be published again without looking: well
// inside the change stream's 2-minute duplicate window.
const changeRepublishAge = 90 * time.Second

// changesOf rebuilds the change-feed events of the row versions the
// command at journal sequence seq produced, from the stored rows: the after image is the version itself (read by
// its sequence), the before image the row's newest version before that sequence (a version
// row, since it was superseded), absent when that is a tombstone or there
// is none.
func changesOf(ctx context.Context, s store.Store, table, pk string, seq uint64, versions []wire.RowVersion) ([]Change, error) {
	var out []Change
	for _, rv := range versions {
		cur, ok, err := rows.VersionBySeq(ctx, s, table, pk, rv.RK, seq)
		if err == nil && (!ok || cur.Version != rv.Version) {
			err = fmt.Errorf("version %d of %q at %d: %w", rv.Version, rv.RK, seq, store.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		var before edm.Entity
		if rv.Version > 0 {
			prev, ok, err := rows.VersionAt(ctx, s, table, pk, rv.RK, seq-1)
			if err == nil && (!ok || prev.Version != rv.Version-1) {
				err = fmt.Errorf("version %d of %q before %d: %w", rv.Version-1, rv.RK, seq, store.ErrNotFound)
			}
			if err != nil {
				return nil, err
			}
			if !prev.Deleted {
				before = prev.Props
			}
		}
		ch := Change{RK: rv.RK, Version: rv.Version, Before: before}
		switch {
		case cur.Deleted:
			ch.Kind = wire.ChangeDelete
		case before == nil:
			ch.Kind, ch.After = wire.ChangeCreate, cur.Props
		default:
			ch.Kind, ch.After = wire.ChangeUpdate, cur.Props
		}
		out = append(out, ch)
	}
	return out, nil
}

// storedChanges reports which of rks already have a change event of
// journal sequence seq or later in the partition's change feed. It reads
// the partition's events from the stream's leader (read-your-writes), from
// a little before the command's journal time at on, until every row is
// found or the events end: one request per event read, for crash recovery
// only. A row's events are sent in journal order with at most one in flight
// (changeFeed.send), so a row with a later event has none missing before it.
func storedChanges(ctx context.Context, js jetstream.JetStream, part partition, seq uint64, at time.Time, rks []string) (map[string]bool, error) {
	want := make(map[string]bool, len(rks))
	for _, rk := range rks {
		want[rk] = true
	}
	found := make(map[string]bool, len(rks))
	// Events are stored after their command, but the journal's and the
	// change feed's leaders may be different servers with clocks apart.
	from := at.Add(-changeClockSkew)
	err := journal.ScanSubject(ctx, js, wire.ChangesStream, wire.ChangeSubject(part.table, part.pk), from, func(_ uint64, data []byte) (bool, error) {
		var ev struct {
			RK  string `json:"rk"`
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, fmt.Errorf("change event of %s/%q: %w", part.table, part.pk, err)
		}
		if want[ev.RK] && ev.Seq >= seq {
			found[ev.RK] = true
		}
		return len(found) < len(want), nil
	})
	if err != nil {
		return nil, fmt.Errorf("change events of %s/%q: %w", part.table, part.pk, err)
	}
	return found, nil
}

// changeClockSkew is how far apart the clocks of two JetStream servers may
// be for storedChanges to find an event stored before its command's
// journal time by another server's clock.
const changeClockSkew = time.Minute
