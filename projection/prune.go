package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/projection/decide"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Prune commands (SPEC §2, "Prune commands"; issue 19). A prune takes
// transactions of its own, between the commands before and after it in
// journal order: decidePrune lists the partition and picks the rows to
// remove (rows.PruneSetPartition); commitPrune removes them in
// transactions of at most store.MaxOps operations, each with the fence
// (conditional on its etag, carrying the new horizon), and the last one
// also writes the prune's own _seq/_cmd/_at. Because a prune is
// idempotent, an interrupted one is completed by its redelivery: decided
// again on the rows left, with the count kept on the fence.

// pruneOpsPerTx is how many rows one prune transaction removes: the fence
// write takes the last of store.MaxOps.
const pruneOpsPerTx = store.MaxOps - 1

// pruneTx is the transactions of a prune, alone: decide decides the prune
// at r.next; when it applies, w is what commit removes.
type pruneTx struct{ w *pruneWork }

// pruneWork is a decided prune, to commit.
type pruneWork struct {
	e       Entry
	remove  []rows.Row
	horizon rows.Horizon // the horizon its transactions write
}

// decide decides the prune at r.next, alone in its "transaction".
func (p *pruneTx) decide(ctx context.Context, r *partitionRun) error {
	if err := r.awaitReady(ctx); err != nil {
		return err
	}
	e := r.entries[r.next]
	r.end, p.w = r.next+1, nil
	r.tx = decide.NewTxn(r.part.pk, map[string]*rowState{}, events.Limits{})
	r.tx.Seen = r.seen
	res := Result{Seq: e.Seq, ID: e.ID}
	defer func() { r.tx.Results = append(r.tx.Results, res) }()
	if err := events.CheckPruneSeq(e.Cmd, e.Seq); err != nil {
		res.Reject(err.Error(), err)
		return nil
	}
	if dup := r.tx.Duplicate(e); dup != "" {
		res.Status, res.Reason = wire.StatusDuplicate, dup
		return nil
	}
	// Always the table's fence: a prune is rare, and must see every row.
	r.forget()
	if err := r.begin(ctx); err != nil {
		return err
	}
	f := r.v.f
	if f.Exists && f.Seq >= e.Seq {
		// Handled before (redelivered after its last transaction, or a
		// later command applied): nothing to write.
		if e.Own != nil {
			res.Status, res.Reason, res.Stored = e.Own.Status, e.Own.Reason, true
			return nil
		}
		res.Status = wire.StatusApplied
		if f.Horizon.Cmd == e.ID {
			res.Pruned = f.Horizon.Removed
		}
		r.tx.AppliedIDs[e.ID] = e.Seq
		return nil
	}
	byRK, err := retryStore(ctx, r.a.policy, "read partition of "+r.part.table, func() (map[string][]rows.Row, error) {
		return rows.ReadPartitionUpTo(ctx, r.a.store, r.tl.rows, r.part.pk, e.Cmd.Prune.Horizon)
	})
	if err != nil {
		return err
	}
	w := &pruneWork{e: e, horizon: f.Horizon}
	w.remove = rows.PruneSetPartition(byRK, e.Cmd.Prune.Horizon)
	if h := e.Cmd.Prune.Horizon; h > f.Horizon.Seq {
		w.horizon = rows.Horizon{Seq: h, Cmd: e.ID, Total: f.Horizon.Total}
		if f.Horizon.Cmd == e.ID {
			w.horizon.Removed = f.Horizon.Removed // resumed after a crash
		}
	}
	res.Status, res.Pruned = wire.StatusApplied, int64(len(w.remove))
	r.tx.AppliedIDs[e.ID] = e.Seq
	if w.horizon.Cmd == e.ID {
		res.Pruned += w.horizon.Removed
	}
	p.w = w
	return nil
}

// commit removes the decided rows, pruneOpsPerTx at a time, each
// transaction with the fence. It returns false when the partition moved
// under it (another writer): the prune is decided again, on what is left.
func (p *pruneTx) commit(ctx context.Context, r *partitionRun) (bool, error) {
	w := p.w
	if w == nil {
		// A rejection, a duplicate, or handled before: nothing to write.
		return r.commitWith(ctx, func(context.Context, *txn) error { return nil })
	}
	for first := true; first || len(w.remove) > 0; first = false {
		n := min(len(w.remove), pruneOpsPerTx)
		next := r.v.f
		next.Exists, next.Horizon = true, w.horizon
		if w.horizon.Cmd == w.e.ID {
			next.Horizon.Removed += int64(n)
		}
		next.Horizon.Total += int64(n)
		if n == len(w.remove) { // the last transaction: the prune applied
			next.Seq, next.Cmd, next.At = w.e.Seq, w.e.ID, w.e.At
		}
		ops := []store.Op{r.v.f.Op(next)}
		for _, row := range w.remove[:n] {
			ops = append(ops, store.Op{Kind: store.Delete, RK: row.StoreKey(), IfMatch: decide.ETagOrAny(row.ETag)})
		}
		etag, err := r.a.transact(ctx, r.rowsPart(), ops)
		if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrPrecondition) {
			// The fence moved, or a row is not as read: decide again.
			r.a.stats.FenceConflicts.Add(1)
			r.forget()
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("prune %s of %s/%q: %w", w.e.ID, r.part.table, r.part.pk, err)
		}
		next.ETag = etag
		r.v.f, w.horizon = next, next.Horizon
		w.remove = w.remove[n:]
		r.a.stats.PrunedRows.Add(int64(n))
	}
	// Cached row states hold no version rows, but the view's fence moved:
	// start the next decision from the table.
	r.forget()
	r.committed()
	return true, nil
}
