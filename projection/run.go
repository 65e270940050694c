package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/projection/decide"
	"github.com/tablejournal/tablejournal/wire"
)

// partitionRun is one partition's entries on their way into the table, one
// transaction at a time (Apply).
type partitionRun struct {
	// fenced is the partition's fence and rows, which every kind of
	// transaction decides on and commits through.
	fenced
	entries []Entry
	next    int // the first entry not committed
	end     int // after decide: tx holds entries[next:end]
	tx      *txn
	// seen: IDs applied before, by sequence (this call's, and with
	// RememberIDs every call's).
	seen               map[string]uint64
	contention, wedged int
	// touched are the RowKeys the entries touch, once each, with the
	// index of the last entry touching each (touchedFrom).
	touched []touchedRK
	// ready is Hooks.Ready until awaitReady called it.
	ready func(ctx context.Context) error
}

type touchedRK struct {
	rk   string
	last int
}

// touchedFrom lists the RowKeys entries[from:] touch, once each: what
// decide.TouchedRKs(r.entries[from:]) lists, without a map per transaction (a hot
// partition's batch was listed again for each of its transactions).
func (r *partitionRun) touchedFrom(from int) []string {
	if r.touched == nil {
		at := make(map[string]int)
		r.touched = make([]touchedRK, 0, len(r.entries))
		for i, e := range r.entries {
			if e.Cmd == nil {
				continue
			}
			for _, op := range e.Cmd.Ops {
				if j, ok := at[op.RK]; ok {
					r.touched[j].last = i
					continue
				}
				at[op.RK] = len(r.touched)
				r.touched = append(r.touched, touchedRK{op.RK, i})
			}
		}
	}
	rks := make([]string, 0, len(r.touched))
	for _, t := range r.touched {
		if t.last >= from {
			rks = append(rks, t.rk)
		}
	}
	return rks
}

// awaitReady calls Hooks.Ready the first time; every kind of transaction
// does before it decides anything (rowsTx once its rows are read).
func (r *partitionRun) awaitReady(ctx context.Context) error {
	ready := r.ready
	if ready == nil {
		return nil
	}
	r.ready = nil
	return ready(ctx)
}

// newRun starts applying entries, all of table and pk and in journal
// order.
func (a *Applier) newRun(ctx context.Context, table, pk string, entries []Entry) (*partitionRun, error) {
	r := &partitionRun{fenced: fenced{a: a, part: partKey{table, pk}}, entries: entries, seen: make(map[string]uint64)}
	// Only valid messages name a valid table: without one, nothing is read
	// or written (rejectOnly).
	if !slices.ContainsFunc(entries, func(e Entry) bool { return e.Err == nil }) {
		return r, nil
	}
	tl, err := a.tableLayout(ctx, table)
	if err != nil {
		return nil, err
	}
	r.tl = tl
	if err := a.ensureTable(ctx, tl.rows); err != nil {
		return nil, err
	}
	if tl.rows != table {
		if err := a.ensureTable(ctx, table); err != nil {
			return nil, err
		}
	}
	if a.rememberIDs {
		for _, e := range entries {
			if s, ok := a.ids.Load(e.ID); ok {
				r.seen[e.ID] = s.(uint64)
			}
		}
	}
	return r, nil
}

// newTxn starts the transaction at r.next on the view's rows.
func (r *partitionRun) newTxn() *txn {
	tx := decide.NewTxn(r.part.pk, r.v.rows, r.a.store.Limits())
	tx.Seen = r.seen
	tx.Erase.To = r.v.f.EraseSeq
	return tx
}

// logDecided logs at Debug the transaction just decided and the view it
// was decided on (the fence, whether its etag is known, the rows' epoch,
// whether rows were read since the fence was checked, and whether the fence
// was checked again for it): what to read when an outcome looks wrong.
func (r *partitionRun) logDecided(checked bool) {
	if !r.a.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	var results strings.Builder
	for _, res := range r.tx.Results {
		fmt.Fprintf(&results, "%d:%s ", res.Seq, res.Status)
	}
	r.a.log.Debug("transaction decided", LogTable, r.part.table, LogPK, r.part.pk,
		"fence", r.v.f.String(), "etag_known", r.v.f.ETag != "", "epoch", r.v.epoch, "fresh", r.v.fresh || checked,
		"checked", checked, "results", strings.TrimSpace(results.String()))
}

// commitWith commits the transaction decided last with write, which writes
// it with the fence. It returns false when the table was not as the view
// said: the transaction must be decided again, on the rows the table holds
// now.
func (r *partitionRun) commitWith(ctx context.Context, write func(context.Context, *txn) error) (bool, error) {
	for _, res := range r.tx.Results {
		if res.Status == wire.StatusApplied && res.Stored { // a skipped command found applied
			r.seen[res.ID] = max(r.seen[res.ID], res.Seq)
		}
	}
	err := write(ctx, r.tx)
	if err == nil {
		// What the layout writes after the transaction (plain: the
		// current rows), before anything is handed on; a failure leaves
		// the partition to be read again, as after a crash here.
		if err = r.tl.layout.mirror(ctx, r); err != nil {
			r.forget()
		}
	}
	var ce *conflictError
	if errors.As(err, &ce) {
		r.a.log.Debug("transaction refused; deciding again", LogTable, r.part.table, LogPK, r.part.pk,
			"fence", r.v.f.String(), "epoch", r.v.epoch, "fence_moved", ce.fence, "err", ce.err)
		return false, r.conflict(ctx, ce)
	}
	if err != nil {
		return false, err
	}
	r.committed()
	return true, nil
}

// conflict handles a transaction the table refused: the partition's view
// and cache are dropped (the store wins) and it is decided again.
func (r *partitionRun) conflict(ctx context.Context, ce *conflictError) error {
	r.forget()
	if ce.fence {
		// Another writer committed first: reload and decide again.
		r.contention++
		r.a.stats.FenceConflicts.Add(1)
		return retry.Sleep(ctx, min(time.Duration(r.contention)*10*time.Millisecond, time.Second))
	}
	// A row was not as the fence said: the table was changed by something
	// other than a fenced projector. Read it again; if it still cannot
	// apply, stop and say where.
	r.wedged++
	r.a.disagree(r.part.table, r.part.pk, "a row is not as its partition's fence says", ce.err)
	if r.wedged > 1 {
		return ce.applyError(r.part.table, r.part.pk)
	}
	return nil
}

// committed takes a committed transaction into the view and the cache
// (fenced.took) and the IDs applied.
func (r *partitionRun) committed() {
	r.took(r.tx)
	for id, s := range r.tx.AppliedIDs {
		r.seen[id] = s
		if r.a.rememberIDs {
			r.a.ids.Store(id, s)
		}
	}
	r.next = r.end
}

func dependsOnState(rs []Result) bool {
	for _, r := range rs {
		if r.DependsOnState {
			return true
		}
	}
	return false
}

// beforeCommit hands the results of the transaction decided last that
// wrote nothing to h.Settle, keeps what it settled, and hands them to
// h.BeforeCommit.
func (r *partitionRun) beforeCommit(ctx context.Context, h Hooks) error {
	rs, idx := selectResults(r.tx.Results, false)
	if len(rs) == 0 {
		return nil
	}
	if h.Settle != nil {
		settled, err := h.Settle(ctx, slices.Clone(rs))
		if err != nil {
			return err
		}
		if settled != nil {
			if len(settled) != len(rs) {
				return fmt.Errorf("settle hook returned %d results for %d", len(settled), len(rs))
			}
			for k, i := range idx {
				r.tx.Results[i] = settled[k]
			}
			rs = settled
		}
	}
	if h.BeforeCommit == nil {
		return nil
	}
	return h.BeforeCommit(ctx, slices.Clone(rs))
}

// selectResults returns a copy of the results of rs of one kind, applied
// (and not stored before) or not, with their indexes in rs.
func selectResults(rs []Result, applied bool) ([]Result, []int) {
	var sel []Result
	var idx []int
	for i, r := range rs {
		if (r.Status == wire.StatusApplied && !r.Stored) == applied {
			sel = append(sel, r)
			idx = append(idx, i)
		}
	}
	return sel, idx
}
