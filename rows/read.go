package rows

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/store"
)

// Reader reads the current and past versions of rows over the layout, with
// the prefixes hidden: what services and the replay tools use.
type Reader struct{ Store store.Store }

// ErrRowNotFound is returned by Reader.Get for a row that does not exist
// (never existed, or is deleted). Checked with errors.Is.
var ErrRowNotFound = errors.New("row not found")

// Get returns the current version of a row: one point read.
func (r Reader) Get(ctx context.Context, table, pk, rk string) (Row, error) {
	e, err := r.Store.Get(ctx, table, pk, TipKey(rk))
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
		return Row{}, fmt.Errorf("%s/%q/%q: %w", table, pk, rk, ErrRowNotFound)
	}
	if err != nil {
		return Row{}, err
	}
	return DecodeRow(e)
}

// Current lists the current rows of one partition or of the whole table
// (store.AllPartitions), in key order, one range query over the tip rows.
func (r Reader) Current(ctx context.Context, table string, part store.Partition, fn func(Row) error) error {
	from, to := TipRange()
	return store.All(ctx, r.Store, table, part.Query(store.Query{From: from, To: to}), func(e store.Entity) error {
		row, err := DecodeRow(e)
		if err != nil {
			return err
		}
		return fn(row)
	})
}

// Versions lists every stored version of a row, newest first: the tip (if
// the row exists) followed by its version rows, tombstones included.
func (r Reader) Versions(ctx context.Context, table, pk, rk string, fn func(Row) error) error {
	tip, err := r.Get(ctx, table, pk, rk)
	switch {
	case err == nil:
		if err := fn(tip); err != nil {
			return err
		}
	case !errors.Is(err, ErrRowNotFound):
		return err
	}
	from, to := HistoryRange(rk)
	return store.All(ctx, r.Store, table, store.Query{PK: pk, From: from, To: to}, func(e store.Entity) error {
		row, err := DecodeRow(e)
		if err != nil {
			return err
		}
		return fn(row)
	})
}

// RowsBySeq reads the version a command (at journal sequence seq) produced
// on each row it names, in the order it first names them: the tip when it
// still carries seq, else the version row keyed by seq. A command makes at
// most one version per row, so this is one or two point reads per row.
// Rows the command did not change are omitted.
func RowsBySeq(ctx context.Context, s store.Store, table, pk string, cmd *events.Command, seq uint64) ([]Row, error) {
	var out []Row
	seen := make(map[string]bool)
	for _, op := range cmd.Ops {
		if seen[op.RK] {
			continue
		}
		seen[op.RK] = true
		row, ok, err := VersionBySeq(ctx, s, table, pk, op.RK, seq)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, row)
		}
	}
	return out, nil
}

// VersionBySeq reads the version of rk that the command at seq wrote.
func VersionBySeq(ctx context.Context, s store.Store, table, pk, rk string, seq uint64) (Row, bool, error) {
	tip, err := Reader{Store: s}.Get(ctx, table, pk, rk)
	switch {
	case err == nil && tip.Seq == seq:
		return tip, true, nil
	case err != nil && !errors.Is(err, ErrRowNotFound):
		return Row{}, false, err
	}
	e, err := s.Get(ctx, table, pk, VersionKey(rk, seq))
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound):
		return Row{}, false, nil
	case err != nil:
		return Row{}, false, fmt.Errorf("version of %s/%q/%q at %d: %w", table, pk, rk, seq, err)
	}
	row, err := DecodeRow(e)
	return row, err == nil, err
}

// VersionAt reads the newest version row of rk written at or before
// journal sequence seq, tombstones included: the row with the least key of
// the range HistoryAt(rk, seq), found by store.Least whatever order the
// store answers in: two requests at any history depth where the store
// sorts (one when there is none), at most 2 + depth/1,000 where it does
// not (Cosmos DB for Table). ok is false when there is none.
func VersionAt(ctx context.Context, s store.Store, table, pk, rk string, seq uint64) (Row, bool, error) {
	from, to := HistoryAt(rk, seq)
	e, ok, err := store.Least(ctx, s, table, store.Query{PK: pk, From: from, To: to})
	if err != nil || !ok {
		return Row{}, false, err
	}
	row, err := DecodeRow(e)
	return row, err == nil, err
}

// Around is one row as the command at a journal sequence found it and left
// it, tombstones included: the version that command wrote (At, nil when it
// wrote none) and the row's newest version before it (Before, nil when the
// row had none).
type Around struct{ At, Before *Row }

// ReadAround reads Around of rk for the command at seq: the tip, then,
// when the tip is not older than seq, one or two version rows (VersionAt),
// so at most five requests whatever the history's depth.
func ReadAround(ctx context.Context, s store.Store, table, pk, rk string, seq uint64) (Around, error) {
	var a Around
	tip, err := Reader{Store: s}.Get(ctx, table, pk, rk)
	switch {
	case err == nil && tip.Seq < seq:
		a.Before = &tip
		return a, nil
	case err == nil && tip.Seq == seq:
		a.At = &tip
	case err != nil && !errors.Is(err, ErrRowNotFound):
		return a, err
	default: // no tip, or a newer one: the version seq wrote is a version row
		v, ok, err := VersionAt(ctx, s, table, pk, rk, seq)
		switch {
		case err != nil && !errors.Is(err, store.ErrTableNotFound):
			return a, err
		case !ok:
			return a, nil
		case v.Seq < seq:
			a.Before = &v
			return a, nil
		}
		a.At = &v
	}
	if seq == 0 {
		return a, nil
	}
	v, ok, err := VersionAt(ctx, s, table, pk, rk, seq-1)
	if err != nil && !errors.Is(err, store.ErrTableNotFound) {
		return a, err
	}
	if ok {
		a.Before = &v
	}
	return a, nil
}
