package projection

import (
	"context"
	"errors"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// Erase commands (SPEC §10), applied in journal order like any command: an
// erase is alone in its transaction; committing it deletes every stored
// row of the key (a row's tip and history, or every row of the partition
// but the fence) in as few transactions as the store allows, each
// conditional on the fence. Only the last one moves the fence, to the
// erase, with its _eraseSeq, and writes the erase's marker: a crash before
// that leaves the erase undone on the fence, and its redelivery lists what
// is left and finishes the job.

// eraseEntry decodes an erase message into e.
func eraseEntry(m journal.Msg, e *Entry) {
	er, err := journal.DecodeEraseMsg(m)
	if err != nil {
		e.Err = err
		return
	}
	e.ID, e.Erase = er.ID, er
}

// eraseTx is the transaction of an erase, alone: decided on the fence
// alone (its _eraseSeq), committed by commitErase.
type eraseTx struct{}

func (eraseTx) decide(ctx context.Context, r *partitionRun) error {
	if err := r.begin(ctx); err != nil {
		return err
	}
	if err := r.awaitReady(ctx); err != nil {
		return err
	}
	r.tx, r.end = r.newTxn(), r.next+1
	if err := r.tx.Add(r.entries[r.next]); err != nil {
		return err
	}
	r.logDecided(false)
	return nil
}

func (eraseTx) commit(ctx context.Context, r *partitionRun) (bool, error) {
	return r.commitWith(ctx, r.commitErase)
}

// eraseBatch is how many rows one erase transaction deletes beside the
// fence and the marker.
const eraseBatch = store.MaxOps - 2

// commitErase commits the erase b holds: the key's rows are deleted in
// transactions of up to eraseBatch rows, each writing the fence on its
// etag; the last also moves the fence to the erase and writes the marker.
// A transaction the table refuses is a *conflictError, decided again.
func (s *fenced) commitErase(ctx context.Context, b *txn) error {
	e := b.Erase.Entry
	if e == nil {
		return nil // skipped, or a duplicate: nothing to erase
	}
	keys, err := retryStore(ctx, s.a.policy, "list rows to erase in "+s.part.table, func() ([]string, error) {
		return eraseKeys(ctx, s.a.store, s.tl.rows, s.part.pk, e.Erase.RK)
	})
	if err != nil {
		return err
	}
	marker := rows.ErasedKey
	if e.Erase.RK != nil {
		marker = rows.ErasedRowKey(*e.Erase.RK)
	}
	last := fence{Exists: true, Seq: e.Seq, Cmd: e.ID, At: e.At, EraseSeq: e.Seq}
	for {
		n := min(len(keys), eraseBatch)
		final := len(keys) <= eraseBatch
		next := s.v.f
		if final {
			next = last
			// The partition's prunes stay in the journal (they hold no
			// values), so their horizon stays; their count goes: it counted
			// erased versions, which a rebuild without the erased commands
			// does not remove, and it must equal the rebuild's.
			next.Horizon = s.v.f.Horizon
			next.Horizon.Removed, next.Horizon.Total = 0, 0
		} else if !s.v.f.Exists {
			// The first transaction of a partition without a fence inserts
			// it; it names the erase only once the erase is done.
			next = fence{Exists: true, Seq: 0, At: e.At, EraseSeq: s.v.f.EraseSeq}
		}
		ops := []store.Op{s.v.f.Op(next)}
		for _, k := range keys[:n] {
			ops = append(ops, store.Op{Kind: store.Delete, RK: k, IfMatch: "*"})
		}
		if final {
			ops = append(ops, store.Op{Kind: store.Upsert, RK: marker,
				Props: rows.Marker{Seq: e.Seq, Cmd: e.ID, At: e.At}.Encode()})
		}
		if err := s.write(ctx, b, next, ops); err != nil {
			return err
		}
		b.CountErased(countLayoutKeys(keys[:n]))
		keys = keys[n:]
		if final {
			break
		}
	}
	// The view's rows (and the cached ones) may be erased rows: start a new
	// epoch on the fence just written.
	s.a.cache.dropPartition(s.part)
	s.v.rows, s.v.fresh, s.v.epoch = make(map[string]*rowState), false, s.a.epochs.Add(1)
	s.a.cache.setFence(s.part, s.v.f, s.v.epoch)
	return nil
}

// countLayoutKeys counts the tip, version and tombstone rows among keys,
// which an erase's outcome counts (wire.Outcome.Erased): not the markers
// of earlier erases it deletes too.
func countLayoutKeys(keys []string) int {
	n := 0
	for _, k := range keys {
		if rows.IsLayoutKey(k) {
			n++
		}
	}
	return n
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
