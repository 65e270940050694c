package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection/decide"
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

// recover returns rs with the skipped results whose outcome is not known
// to be stored settled; rs itself is not changed.
func (b *batch) recover(ctx context.Context, part partition, rs []Result) ([]Result, error) {
	rs = slices.Clone(rs)
	for i := range rs {
		if r := &rs[i]; r.Status == Skipped && !r.Stored {
			rc := recovery{p: b.p, part: part, r: r}
			for _, x := range b.entries[part] {
				if x.Seq == r.Seq {
					rc.e = x
				}
			}
			if err := rc.findOutcome(ctx); err != nil {
				return nil, err
			}
		}
	}
	return rs, nil
}

// recovery settles one redelivered command whose effect is already in the
// table and whose outcome is not known to be stored: it sets r's Status
// (and Rows, Changes) to the outcome to publish, or marks it Stored. It
// never leaves r without an outcome.
//
// It asks the outcomes stream first. When the outcome is not there it reads
// the rows the command names once, as the command found and left them
// (rows.Around, one retried read), and settles from that alone:
//
//   - if the projector crashed between a commit and publishing the
//     outcomes, the outcome of an applied command is rebuilt from the
//     versions that carry its sequence, with its change events;
//   - a command that wrote nothing had its outcome published before any
//     later commit (publishUnwritten), so it is found in the outcomes
//     stream. If it is not, the table (or the outcomes stream) lost what
//     the projector wrote: that is logged at ERROR and counted, and the
//     outcome is rebuilt by deciding the command again on its rows as they
//     stood before it.
type recovery struct {
	p    *Projector
	part partition
	e    Entry
	r    *Result
	rows map[string]rows.Around // by RowKey, as the command found and left them
}

func (rc *recovery) findOutcome(ctx context.Context) error {
	found, err := rc.p.storedOutcome(ctx, rc.r, rc.e)
	if err != nil || found || recoverErased(rc.r, rc.e) {
		return err
	}
	if rc.e.Cmd == nil {
		// Only valid commands can be skipped; an invalid one is rejected
		// again on the message alone.
		rc.r.Reject(fmt.Sprint(rc.e.Err), rc.e.Err)
		return nil
	}
	if err := rc.read(ctx); err != nil {
		return err
	}
	versions := rc.versions()
	if len(versions) == 0 {
		return rc.fromHistory()
	}
	rc.r.Status, rc.r.Rows = wire.StatusApplied, versions
	return rc.changes(ctx)
}

// storedOutcome looks for the outcome of e in the outcomes stream (or in
// what the batch's look-up found) and, when it is there, marks r Stored
// with it.
func (p *Projector) storedOutcome(ctx context.Context, r *Result, e Entry) (bool, error) {
	if e.Own != nil {
		// The batch's look-up found it.
		r.Status, r.Reason, r.Stored = e.Own.Status, e.Own.Reason, true
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
	if !r.Erased && e.Erase == nil {
		return false
	}
	r.Status, r.Rows, r.Changes = wire.StatusApplied, nil, decide.EraseNotice(e)
	return true
}

// read reads the rows the command names around its sequence: the one
// read of the table recovery makes, retried as every store call.
func (rc *recovery) read(ctx context.Context) error {
	e, table, pk := rc.e, rc.part.table, rc.part.pk
	tl, err := rc.p.applier.tableLayout(ctx, table)
	if err != nil {
		return err
	}
	table = tl.rows
	rc.rows, err = retryStore(ctx, rc.p.applier.policy, "read the history of "+table, func() (map[string]rows.Around, error) {
		out := make(map[string]rows.Around)
		for _, rk := range decide.TouchedRKs([]Entry{e}) {
			a, err := rows.ReadAround(ctx, rc.p.store, table, pk, rk, e.Seq)
			if err != nil {
				return nil, err
			}
			out[rk] = a
		}
		return out, nil
	})
	return err
}

// versions are the versions the command wrote, in the order it first
// names their rows.
func (rc *recovery) versions() []wire.RowVersion {
	var out []wire.RowVersion
	for _, rk := range decide.TouchedRKs([]Entry{rc.e}) {
		if v := rc.rows[rk].At; v != nil {
			out = append(out, wire.RowVersion{RK: v.RK, Version: v.Version, Op: v.Op, Deleted: v.Deleted})
		}
	}
	return out
}

// fromHistory settles a skipped command that has neither an outcome nor a
// version in the table, which the projector never leaves behind: it
// decides the command again on its rows as they stood just before it. If
// that says the command applied, the table lost its effect, and the
// outcome says so as a rejection (nothing of it is in the table).
func (rc *recovery) fromHistory() error {
	e := rc.e
	state := make(map[string]*rowState, len(rc.rows))
	for rk, a := range rc.rows {
		state[rk] = stateBefore(a)
	}
	b := decide.NewTxn(rc.part.pk, state, rc.p.store.Limits())
	if err := b.Add(e); err != nil {
		return err
	}
	res := b.Results[0]
	if res.Status == wire.StatusApplied && len(res.Rows) == 0 {
		// It applied and changed nothing (it inserted and deleted a row):
		// no version to find, and its outcome is published after the
		// commit of its batch, so a crash may lose it. Nothing disagrees.
		*rc.r = res
		return nil
	}
	if res.Status == wire.StatusApplied {
		res = Result{Seq: e.Seq, ID: e.ID, Status: wire.StatusRejected, Code: wire.CodeLostWrite,
			Reason: "not in the table: the rows moved on past this command, but no version carries it (the store lost a confirmed write?)"}
	}
	rc.p.applier.disagree(rc.part.table, rc.part.pk,
		fmt.Sprintf("seq %d (command %s) was handled but has no outcome and no version; outcome rebuilt from the rows' history: %s", e.Seq, e.ID, res.Status),
		errors.New("outcome missing"))
	*rc.r = res
	return nil
}

// stateBefore is a row's state just before a command, for deciding it
// again.
func stateBefore(a rows.Around) *rowState {
	switch {
	case a.Before == nil:
		return &rowState{}
	case a.Before.Deleted:
		return &rowState{Latest: a.Before}
	}
	t := *a.Before
	t.Tip, t.ETag = true, ""
	return &rowState{Tip: &t, Latest: &t}
}

// changes rebuilds the change events of a recovered applied command from
// its versions and the ones before them, to be published again: those not
// already stored.
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
func (rc *recovery) changes(ctx context.Context) error {
	if rc.p.cfg.NoChangeFeed {
		return nil
	}
	r := rc.r
	changes, err := changesOf(rc.rows, r.Rows)
	if err != nil {
		rc.p.applier.disagree(rc.part.table, rc.part.pk, fmt.Sprintf("a version before those of seq %d (command %s) is missing", r.Seq, r.ID), err)
		return nil
	}
	if time.Since(rc.e.At) > changeRepublishAge {
		rks := make([]string, len(changes))
		for i, c := range changes {
			rks[i] = c.RK
		}
		stored, err := storedChanges(ctx, rc.p.js, rc.part.spelled(&rc.e), r.Seq, rc.e.At, rks)
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

// changesOf rebuilds the change-feed events of the versions a command
// wrote from its rows as it found and left them: the after image is the
// version itself, the before image the row's newest version before it (a
// version row, since it was superseded), absent when that is a tombstone
// or there is none.
func changesOf(around map[string]rows.Around, versions []wire.RowVersion) ([]Change, error) {
	var out []Change
	for _, rv := range versions {
		a := around[rv.RK]
		cur := a.At
		if cur == nil || cur.Version != rv.Version {
			return nil, fmt.Errorf("version %d of %q: %w", rv.Version, rv.RK, store.ErrNotFound)
		}
		var before edm.Entity
		if rv.Version > 0 {
			prev := a.Before
			if prev == nil || prev.Version != rv.Version-1 {
				return nil, fmt.Errorf("version %d of %q: %w", rv.Version-1, rv.RK, store.ErrNotFound)
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
// part's table is as the command spells it: a projector before the table
// token was lower case stored the events under that spelling
// (wire.ChangeSubjects).
func storedChanges(ctx context.Context, js jetstream.JetStream, part partition, seq uint64, at time.Time, rks []string) (map[string]bool, error) {
	want := make(map[string]bool, len(rks))
	for _, rk := range rks {
		want[rk] = true
	}
	found := make(map[string]bool, len(rks))
	// Events are stored after their command, but the journal's and the
	// change feed's leaders may be different servers with clocks apart.
	from := at.Add(-changeClockSkew)
	for _, subject := range wire.ChangeSubjects(part.table, part.pk) {
		if len(found) == len(want) {
			break
		}
		if err := scanStoredChanges(ctx, js, subject, from, seq, part, want, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// scanStoredChanges marks in found the rows of want with an event of
// sequence seq or later on subject.
func scanStoredChanges(ctx context.Context, js jetstream.JetStream, subject string, from time.Time, seq uint64, part partition, want, found map[string]bool) error {
	err := jsapi.ScanSubject(ctx, js, wire.ChangesStream, subject, from, func(_ uint64, data []byte) (bool, error) {
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
		return fmt.Errorf("change events of %s/%q: %w", part.table, part.pk, err)
	}
	return nil
}

// changeClockSkew is how far apart the clocks of two JetStream servers may
// be for storedChanges to find an event stored before its command's
// journal time by another server's clock.
const changeClockSkew = time.Minute
