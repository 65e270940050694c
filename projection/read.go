package projection

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

// VersionsBySeq finds the versions a command (at journal sequence seq)
// produced on each row it names: the tip when it still carries seq, else
// the version row that does. Rows the command did not change are omitted.
func VersionsBySeq(ctx context.Context, s store.Store, table, pk string, cmd *events.Command, seq uint64) ([]RowVersion, error) {
	rd := Reader{Store: s}
	var out []RowVersion
	seen := make(map[string]bool)
	for _, op := range cmd.Ops {
		if seen[op.RK] {
			continue
		}
		seen[op.RK] = true
		var found []Row
		tip, err := rd.Get(ctx, table, pk, op.RK)
		if err == nil && tip.Seq == seq {
			found = append(found, tip)
		} else if err != nil && !errors.Is(err, ErrRowNotFound) {
			return nil, err
		}
		from, to := HistoryRange(op.RK)
		q := store.Query{PK: pk, From: from, To: to,
			Filter: []store.Cond{{Prop: ColSeq, Cmp: store.Eq, Value: events.Int64(int64(seq))}}}
		err = store.All(ctx, s, table, q, func(e store.Entity) error {
			row, err := DecodeRow(e)
			if err != nil {
				return err
			}
			// A version row copied from a tip keeps the tip's _seq; the
			// versions this command produced are the newest ones with it.
			found = append(found, row)
			return nil
		})
		if err != nil {
			return nil, err
		}
		// Oldest first, and keep only versions whose op is this command's.
		for i := len(found) - 1; i >= 0; i-- {
			row := found[i]
			if i < len(found)-1 && found[i+1].Version == row.Version {
				continue // the tip and its copy
			}
			out = append(out, RowVersion{RK: row.RK, Version: row.Version, Op: row.Op, Deleted: row.Deleted})
		}
	}
	return out, nil
}

// ChangesOf rebuilds the change-feed events of row versions from the stored
// rows: the after image is version v itself, the before image version v-1
// (a version row, since it was superseded), absent when v-1 is a tombstone
// or v is 0.
func ChangesOf(ctx context.Context, s store.Store, table, pk string, rows []RowVersion) ([]Change, error) {
	read := func(rk string, v int64) (*Row, error) {
		tip, err := Reader{Store: s}.Get(ctx, table, pk, rk)
		if err == nil && tip.Version == v {
			return &tip, nil
		}
		if err != nil && !errors.Is(err, ErrRowNotFound) {
			return nil, err
		}
		e, err := s.Get(ctx, table, pk, VersionKey(rk, v))
		if err != nil {
			return nil, fmt.Errorf("version %d of %q: %w", v, rk, err)
		}
		r, err := DecodeRow(e)
		return &r, err
	}
	var out []Change
	for _, rv := range rows {
		cur, err := read(rv.RK, rv.Version)
		if err != nil {
			return nil, err
		}
		var before events.Entity
		if rv.Version > 0 {
			prev, err := read(rv.RK, rv.Version-1)
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
			ch.Kind = Delete
		case before == nil:
			ch.Kind, ch.After = Create, cur.Props
		default:
			ch.Kind, ch.After = Update, cur.Props
		}
		out = append(out, ch)
	}
	return out, nil
}
