package history

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// AsOfErasures is AsOf that also says what was erased of the partition or
// table after seq (SPEC §10), so that a state missing erased keys is not
// taken for the whole state: erased, when not nil, is called once before
// the first row with those erasures (whole partitions and rows, in key
// order; none is an empty slice).
//
// A partition erased as a whole after seq answers its *replay.ErasedError (its
// state at seq is gone); asked over the whole table, such a partition is
// reported to erased, never fails the read, and has no rows at seq. A row
// erased after seq is reported and left out. A point before a partition's
// prune horizon answers *replay.PrunedError, unless the partition was erased
// after seq (the erase is the answer).
//
// The erasures and the prune horizons are found with one range read of the
// markers and fences of the partition or table (the RowKey range from
// "erased" to the fence, which holds no tip or version row).
func (r *Reader) AsOfErasures(ctx context.Context, table string, part store.Partition, seq uint64,
	erased func([]*replay.ErasedError) error, fn func(rows.Row) error) error {
	vt, err := r.VersionTable(ctx, table)
	if err != nil {
		return err
	}
	gone, err := pointCheck(ctx, r.Store(), vt, part, seq)
	if err != nil {
		return replay.Logical(err, table)
	}
	for _, g := range gone {
		g.Table = table
	}
	if erased != nil {
		if err := erased(gone); err != nil {
			return err
		}
	}
	return scanAt(ctx, r.Store(), vt, part, seq, func(row rows.Row) error {
		if row.Deleted {
			return nil
		}
		return fn(row)
	})
}

// pointCheck reads the erase markers and fences of part: the erasures
// after seq, or the error that answers for the whole of part (an erased
// partition asked alone, a pruned one).
func pointCheck(ctx context.Context, st store.Store, table string, part store.Partition, seq uint64) ([]*replay.ErasedError, error) {
	gone := []*replay.ErasedError{}
	var pruned []*replay.PrunedError
	// [ErasedKey, FenceKeyEnd) holds the markers and the fence, no row of
	// the layout.
	q := part.Query(store.Query{From: rows.ErasedKey, To: rows.FenceKeyEnd})
	err := store.All(ctx, st, table, q, func(e store.Entity) error {
		if e.RK == rows.FenceKey {
			if h := rows.HorizonOf(e.Props); h.Pruned(seq) {
				pruned = append(pruned, &replay.PrunedError{Table: table, PK: e.PK, Seq: seq, Horizon: h})
			}
			return nil
		}
		rk, whole, ok := rows.MarkerRK(e.RK)
		if !ok {
			return nil
		}
		m, ok := rows.DecodeMarker(e)
		if !ok || m.Seq <= seq {
			return nil
		}
		ee := &replay.ErasedError{Table: table, PK: e.PK, Cmd: m.Cmd, Seq: m.Seq, At: m.At}
		if !whole {
			ee.RK = &rk
		}
		gone = append(gone, ee)
		return nil
	})
	if errors.Is(err, store.ErrTableNotFound) {
		return gone, nil
	}
	if err != nil {
		return nil, fmt.Errorf("asof %s/%s at %d: erasures and prune horizons: %w", table, part, seq, err)
	}
	whole := map[string]bool{}
	for _, g := range gone {
		if g.RK == nil {
			if !part.All {
				return nil, g
			}
			whole[g.PK] = true
		}
	}
	for _, p := range pruned {
		if !whole[p.PK] {
			return nil, p
		}
	}
	return gone, nil
}
