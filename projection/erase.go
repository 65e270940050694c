package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Erase commands (SPEC §10), applied in journal order like any command: an
// erase is alone in its transaction; committing it deletes every stored
// row of the key (a row's tip and history, or every row of the partition
// but the fence) in as few transactions as the store allows, each
// conditional on the fence. Only the last one moves the fence, to the
// erase, with its _eraseSeq, and writes the erase's marker: a crash before
// that leaves the erase undone on the fence, and its redelivery lists what
// is left and finishes the job.

// eraseState is what a transaction knows of erases.
type eraseState struct {
	// to is the fence's _eraseSeq: an entry at or below it was handled
	// before an erase, which may have removed the rows that would say so.
	to uint64
	// entry is the erase this transaction applies, alone.
	entry *Entry
}

// eraseEntry decodes an erase message into e.
func eraseEntry(m journal.Msg, e *Entry) {
	er, err := journal.DecodeEraseMsg(m)
	if err != nil {
		e.Err = err
		return
	}
	e.ID, e.Erase = er.ID, er
}

// addErased adds e to the batch when it is an erase, or was handled before
// the partition's newest erase, or follows an erase in the batch (errFull:
// an erase is alone in its transaction). done says e was dealt with here.
func (b *txn) addErased(e Entry, res Result) (done bool, err error) {
	switch {
	case b.er.entry != nil:
		return true, errFull
	case e.Seq <= b.er.to:
		res.Status, res.erased = Skipped, true
		b.results = append(b.results, res)
		return true, nil
	case e.Erase == nil:
		return false, nil
	case len(b.results) > 0:
		return true, errFull
	}
	if dup := b.duplicateErase(e); dup != "" {
		res.Status, res.Reason = wire.StatusDuplicate, dup
		b.results = append(b.results, res)
		return true, nil
	}
	b.er.entry = &e
	b.appliedIDs[e.ID] = e.Seq
	// An erase applies whatever the rows hold; its outcome names no row.
	res.Status, res.Changes = wire.StatusApplied, eraseNotice(e)
	b.results = append(b.results, res)
	return true, nil
}

// duplicateErase says why the erase e is a duplicate, or "": an ID
// applies at most once, ever, and an erase applied again long after would
// remove what the partition got since.
func (b *txn) duplicateErase(e Entry) string {
	if s, ok := b.seen[e.ID]; ok && s < e.Seq {
		return fmt.Sprintf("command %s already applied at journal sequence %d", e.ID, s)
	}
	if e.Prior.Seq != 0 && e.Prior.Seq < e.Seq && (e.Prior.Status == wire.StatusApplied || e.Prior.Status == wire.StatusDuplicate) {
		return fmt.Sprintf("command %s already applied at journal sequence %d", e.ID, e.Prior.Seq)
	}
	return ""
}

// eraseTx is the transaction of an erase, alone: decided on the fence
// alone (its _eraseSeq), committed by commitErase.
type eraseTx struct{}

func (eraseTx) decide(ctx context.Context, r *partitionRun) error {
	if err := r.a.begin(ctx, r.part, &r.v); err != nil {
		return err
	}
	if err := r.awaitReady(ctx); err != nil {
		return err
	}
	r.tx, r.end = r.newTxn(), r.next+1
	if err := r.tx.add(r.entries[r.next]); err != nil {
		return err
	}
	r.logDecided(false)
	return nil
}

func (eraseTx) commit(ctx context.Context, r *partitionRun) (bool, error) {
	return r.commitWith(ctx, r.a.commitErase)
}

// eraseBatch is how many rows one erase transaction deletes beside the
// fence and the marker.
const eraseBatch = store.MaxOps - 2

// commitErase commits the erase b holds: the key's rows are deleted in
// transactions of up to eraseBatch rows, each writing the fence on its
// etag; the last also moves the fence to the erase and writes the marker.
// A transaction the table refuses is a *conflictError, decided again.
func (a *Applier) commitErase(ctx context.Context, part partKey, v *view, b *txn) error {
	e := b.er.entry
	if e == nil {
		return nil // skipped, or a duplicate: nothing to erase
	}
	keys, err := retryStore(ctx, a.policy, "list rows to erase in "+part.table, func() ([]string, error) {
		return eraseKeys(ctx, a.store, part.table, part.pk, e.Erase.RK)
	})
	if err != nil {
		return err
	}
	marker := rows.ErasedKey
	if e.Erase.RK != nil {
		marker = rows.ErasedRowKey(*e.Erase.RK)
	}
	last := fence{exists: true, seq: e.Seq, cmd: e.ID, at: e.At, eraseSeq: e.Seq}
	for {
		n := min(len(keys), eraseBatch)
		final := len(keys) <= eraseBatch
		next := v.f
		if final {
			next = last
			// The partition's prunes stay in the journal (they hold no
			// values), so their horizon stays; their count goes: it counted
			// erased versions, which a rebuild without the erased commands
			// does not remove, and it must equal the rebuild's.
			next.horizon = v.f.horizon
			next.horizon.Removed = 0
		} else if !v.f.exists {
			// The first transaction of a partition without a fence inserts
			// it; it names the erase only once the erase is done.
			next = fence{exists: true, seq: 0, at: e.At, eraseSeq: v.f.eraseSeq}
		}
		ops := []store.Op{v.f.op(next)}
		for _, k := range keys[:n] {
			ops = append(ops, store.Op{Kind: store.Delete, RK: k, IfMatch: "*"})
		}
		if final {
			ops = append(ops, store.Op{Kind: store.Upsert, RK: marker,
				Props: rows.Marker{Seq: e.Seq, Cmd: e.ID, At: e.At}.Encode()})
		}
		etag, err := a.transact(ctx, part, ops)
		if err != nil {
			return a.commitFailed(ctx, part, v, b, ops, err)
		}
		b.wrote = true
		next.etag = etag
		v.f = next
		keys = keys[n:]
		if final {
			break
		}
	}
	// The view's rows (and the cached ones) may be erased rows: start a new
	// epoch on the fence just written.
	a.cache.dropPartition(part)
	v.rows, v.fresh, v.epoch = make(map[string]*rowState), false, a.epochs.Add(1)
	a.cache.setFence(part, v.f, v.epoch)
	return nil
}

// eraseKeys lists the stored RowKeys an erase of rk (nil: the partition)
// deletes: every row but the fence, or the row's tip and history.
func eraseKeys(ctx context.Context, s store.Store, table, pk string, rk *string) ([]string, error) {
	var keys []string
	collect := func(e store.Entity) error {
		if e.RK != rows.FenceKey {
			keys = append(keys, e.RK)
		}
		return nil
	}
	if rk == nil {
		err := store.All(ctx, s, table, store.Query{PK: pk}, collect)
		if errors.Is(err, store.ErrTableNotFound) {
			return nil, nil
		}
		return keys, err
	}
	_, err := s.Get(ctx, table, pk, rows.TipKey(*rk))
	switch {
	case err == nil:
		keys = append(keys, rows.TipKey(*rk))
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
	default:
		return nil, err
	}
	from, to := rows.HistoryRange(*rk)
	err = store.All(ctx, s, table, store.Query{PK: pk, From: from, To: to}, collect)
	if errors.Is(err, store.ErrTableNotFound) {
		return nil, nil
	}
	return keys, err
}

// eraseNotice is the change of an applied erase: its notice (wire.ChangeErase:
// the key and no values; Partition for a whole partition); none for an entry
// that is no erase.
func eraseNotice(e Entry) []Change {
	if e.Erase == nil {
		return nil
	}
	if e.Erase.RK == nil {
		return []Change{{Kind: wire.ChangeErase, Partition: true}}
	}
	return []Change{{Kind: wire.ChangeErase, RK: *e.Erase.RK}}
}
