package projection

import (
	"context"
	"errors"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/projection/decide"
)

// Apply applies entries, all of table and pk and in journal order, handing
// the results of each transaction to h. It is the one driver of the
// exactly-once path: the projector (batch.go) and replay's rebuild both
// call it. Each transaction is decided on the table, its results that
// wrote nothing go to h.Settle and h.BeforeCommit, it commits, and its
// applied results go to h.AfterCommit; a transaction the table refused is decided again.
// What a transaction is decided and committed as depends on its kind
// (txKind). Apply returns nil once every entry has a result handed to
// hooks; an error means a persistent store failure (or a hook's error),
// and entries from the failed transaction on were not applied.
//
// A row of the partition that the projector did not write (a
// rows.ErrForeignRow) ends it with a *HeldError naming the row and the
// first entry not applied: the entries from it on are held (SPEC §5).
func (a *Applier) Apply(ctx context.Context, table, pk string, entries []Entry, h Hooks) error {
	r, err := a.newRun(ctx, table, pk, entries)
	if err != nil {
		return err
	}
	if err := r.apply(ctx, h); err != nil {
		return r.held(err)
	}
	return nil
}

// apply is Apply's loop over the transactions of r.
func (r *partitionRun) apply(ctx context.Context, h Hooks) error {
	r.ready = h.Ready
	for r.next < len(r.entries) {
		kind := kindOf(r.entries[r.next])
		if err := kind.decide(ctx, r); err != nil {
			return err
		}
		if err := r.beforeCommit(ctx, h); err != nil {
			return err
		}
		committed, err := kind.commit(ctx, r)
		if err != nil {
			return err
		}
		if committed {
			if rs, _ := selectResults(r.tx.Results, true); len(rs) > 0 && h.AfterCommit != nil {
				if err := h.AfterCommit(ctx, rs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// txKind is a kind of transaction: how the transaction that starts at
// r.entries[r.next] is decided on the table (decide sets r.tx to the
// results of r.entries[r.next:r.end]) and committed (commit reports false
// when the table was not as decided: the transaction is decided again).
type txKind interface {
	decide(ctx context.Context, r *partitionRun) error
	commit(ctx context.Context, r *partitionRun) (bool, error)
}

// kindOf is the kind of the transaction that starts with e: a message that
// cannot apply (rejectOnly), an erase (eraseTx, erase.go), a prune
// (pruneTx, prune.go), else the commands that write rows (rowsTx).
func kindOf(e Entry) txKind {
	switch {
	case e.Err != nil:
		return rejectOnly{}
	case e.Erase != nil:
		return eraseTx{}
	case decide.IsPrune(e):
		return &pruneTx{}
	}
	return rowsTx{}
}

// ownTx reports whether e takes a transaction of its own kind (an erase,
// a prune), after the ones before it.
func ownTx(e Entry) bool { return e.Erase != nil || decide.IsPrune(e) }

// rejectOnly is a transaction of messages that cannot apply (undecodable,
// invalid, or on a subject that names no valid table): each is rejected on
// the message alone, without reading the partition's rows or fence (its
// table may not even be a valid name), and nothing is written.
type rejectOnly struct{}

func (rejectOnly) decide(ctx context.Context, r *partitionRun) error {
	if err := r.awaitReady(ctx); err != nil {
		return err
	}
	r.tx = decide.NewTxn(r.part.pk, map[string]*rowState{}, events.Limits{})
	for r.end = r.next; r.end < len(r.entries) && r.entries[r.end].Err != nil; r.end++ {
		if err := r.tx.Add(r.entries[r.end]); err != nil {
			return err
		}
	}
	return nil
}

func (rejectOnly) commit(_ context.Context, r *partitionRun) (bool, error) {
	r.next = r.end // nothing to write
	return true, nil
}

// rowsTx is a transaction of consecutive commands that write rows (and
// messages that cannot apply among them), as many as fit the store's
// limits, up to the next erase or prune.
type rowsTx struct{}

// decide decides the transaction on the partition's rows as the table
// holds them: the fence (rule 4) and the rows under it, from the cache
// when cached under the same fence (rule 5). A rejection is decided on the
// rows' state, so when rows were read since the fence was last checked the
// fence is read again, and the transaction decided again if it moved (rule
// 6).
func (rowsTx) decide(ctx context.Context, r *partitionRun) error {
	for {
		behind, err := r.open(ctx, r.touchedFrom(r.next))
		if err != nil {
			return err
		}
		if behind {
			// A row read is newer than the view's fence: another writer
			// committed since the fence was read or cached. Commands it
			// applied would be skipped on that row while the view's other
			// rows lack their effects, and a rejection decided on them is
			// published before anything is written: read the fence again.
			if ok, err := r.check(ctx); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
		}
		// The rows are read: what remains to decide on are the earlier
		// outcomes of the commands' IDs.
		if err := r.awaitReady(ctx); err != nil {
			return err
		}
		r.tx = r.newTxn()
		for r.end = r.next; r.end < len(r.entries); r.end++ {
			if r.end > r.next && ownTx(r.entries[r.end]) {
				break
			}
			if err := r.tx.Add(r.entries[r.end]); errors.Is(err, decide.ErrFull) {
				break
			}
		}
		if !r.v.fresh || !dependsOnState(r.tx.Results) {
			r.logDecided(false)
			return nil
		}
		if ok, err := r.check(ctx); err != nil || ok {
			if ok {
				r.logDecided(true)
			}
			return err
		}
	}
}

func (rowsTx) commit(ctx context.Context, r *partitionRun) (bool, error) {
	return r.commitWith(ctx, r.commitRows)
}
