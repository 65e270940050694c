package history

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Erased reports whether the row table/pk/rk was erased after journal
// sequence at (0: at any time): the newest erase marker of the row or its
// partition, when its erase came after at, as an *replay.ErasedError; nil when
// the row was not erased (or only before at).
func (r *Reader) Erased(ctx context.Context, table, pk, rk string, at uint64) error {
	vt, err := r.VersionTable(ctx, table)
	if err != nil {
		return err
	}
	var newest *replay.ErasedError
	for _, key := range []string{rows.ErasedKey, rows.ErasedRowKey(rk)} {
		e, err := r.Store().Get(ctx, vt, pk, key)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		m, ok := rows.DecodeMarker(e)
		if !ok || newest != nil && newest.Seq >= m.Seq {
			continue
		}
		newest = &replay.ErasedError{Table: table, PK: pk, Cmd: m.Cmd, Seq: m.Seq, At: m.At}
		if key != rows.ErasedKey {
			newest.RK = &rk
		}
	}
	if newest == nil || at != 0 && newest.Seq <= at {
		return nil
	}
	return newest
}

// erasedHistory is the *replay.ErasedError of a row with no stored version that
// an erase removed; nil otherwise. Versions left of an erased row are all
// written after the erase (a new history), so a row with any is not
// reported, and costs no read.
func (r *Reader) erasedHistory(ctx context.Context, table, pk, rk string, versions []rows.Row) error {
	if len(versions) > 0 {
		return nil
	}
	return r.Erased(ctx, table, pk, rk, 0)
}

// ErasedKeys are the keys of a table erased after a point: whole
// partitions, and rows by partition.
type ErasedKeys struct {
	parts map[string]bool
	rows  map[[2]string]bool
}

// ErasedAfter reads the journal after seq for the erases of table; nil
// without a journal connection.
func (r *Reader) ErasedAfter(ctx context.Context, table string, seq uint64) (*ErasedKeys, error) {
	if r.Journal() == nil || table == "" {
		return nil, nil
	}
	k := &ErasedKeys{parts: map[string]bool{}, rows: map[[2]string]bool{}}
	err := r.Journal().ReadAny(ctx, seq+1, 0, wire.TableFilters(table), func(m journal.Msg) error {
		if !journal.IsEraseMsg(m.Header) {
			return nil
		}
		e, err := journal.DecodeEraseMsg(m)
		switch {
		case err != nil:
		case e.RK == nil:
			k.parts[e.PK] = true
		default:
			k.rows[[2]string{e.PK, *e.RK}] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("erases after seq %d: %w", seq, err)
	}
	return k, nil
}

// Drops reports whether a snapshot's row belongs to an erased key: a tip
// or version row of an erased row, or any row (the fence too, which names
// the partition) of an erased partition.
func (k *ErasedKeys) Drops(e store.Entity) bool {
	if k == nil {
		return false
	}
	if k.parts[e.PK] {
		return true // every row of an erased partition, its fence too
	}
	rk, _, _, ok := rows.ParseKey(e.RK)
	return ok && k.rows[[2]string{e.PK, rk}]
}

// eraseNote describes an erase message for blame; ok is false for any
// other message.
func eraseNote(m journal.Msg) (string, bool) {
	if !journal.IsEraseMsg(m.Header) {
		return "", false
	}
	e, err := journal.DecodeEraseMsg(m)
	if err != nil {
		return fmt.Sprintf("an erase that does not decode: %v", err), true
	}
	return "an erase of " + e.Key() + ", not a command: it wrote no versions", true
}

// erasedRows is the *replay.ErasedError of the first row of an applied outcome
// that an erase after it removed; nil when none was.
func (r *Reader) erasedRows(ctx context.Context, o wire.Outcome) error {
	for _, rv := range o.Rows {
		if err := r.Erased(ctx, o.Table, o.PK, rv.RK, o.Seq); err != nil {
			return err
		}
	}
	return nil
}

// AsOfRowErased is AsOfRow that says why a row is not found when an erase
// is the answer (SPEC §10): a row that never existed or was erased answers
// the erase that removed it, if one did, as *replay.ErasedError; a row
// deleted by a command keeps its tombstone answer; a point before the
// prune horizon answers the erase when one after the point removed the
// row, since the erase is what took its state for good.
func (r *Reader) AsOfRowErased(ctx context.Context, table, pk, rk string, seq uint64) (rows.Row, bool, error) {
	row, ok, err := r.AsOfRow(ctx, table, pk, rk, seq)
	switch {
	case err == nil && !ok && !row.Deleted:
		err = r.Erased(ctx, table, pk, rk, 0) // gone because erased?
	case errors.Is(err, replay.ErrPruned):
		if e := r.Erased(ctx, table, pk, rk, seq); e != nil {
			err = e
		}
	}
	return row, ok, err
}
