package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// ErrPruned: the point asked about is before its partition's prune
// horizon (SPEC §4, §6): the versions that answered it were removed by a
// prune command. The error is a *PrunedError naming the horizon and the
// prune.
var ErrPruned = errors.New("history pruned")

// PrunedError says which partition's history is pruned before which
// horizon, and by which prune command.
type PrunedError struct {
	Table, PK string
	// Seq is the point asked about.
	Seq     uint64
	Horizon rows.Horizon
}

func (e *PrunedError) Error() string {
	return fmt.Sprintf("%s/%q at journal sequence %d: %v: the partition's history before sequence %d was removed by prune command %s",
		e.Table, e.PK, e.Seq, ErrPruned, e.Horizon.Seq, e.Horizon.Cmd)
}

// Unwrap returns ErrPruned.
func (e *PrunedError) Unwrap() error { return ErrPruned }

// checkHorizon returns a *PrunedError when seq is before the prune horizon
// of partition pk (one point read of its fence).
func checkHorizon(ctx context.Context, st store.Store, table, pk string, seq uint64) error {
	h, err := rows.ReadHorizon(ctx, st, table, pk)
	if err != nil {
		return fmt.Errorf("read the prune horizon of %s/%q: %w", table, pk, err)
	}
	if h.Pruned(seq) {
		return &PrunedError{Table: table, PK: pk, Seq: seq, Horizon: h}
	}
	return nil
}

// checkHorizons is checkHorizon for a partition or a whole table: one
// range read of the fence rows.
func checkHorizons(ctx context.Context, st store.Store, table string, part store.Partition, seq uint64) error {
	if !part.All {
		return checkHorizon(ctx, st, table, part.PK, seq)
	}
	return fenceRows(ctx, st, table, part, func(e store.Entity) error {
		if h := rows.HorizonOf(e.Props); h.Pruned(seq) {
			return &PrunedError{Table: table, PK: e.PK, Seq: seq, Horizon: h}
		}
		return nil
	})
}

// fenceRows calls fn with the fence row of every partition of part that
// has one (every partition the projector wrote): one range read. A missing
// table has none.
func fenceRows(ctx context.Context, st store.Store, table string, part store.Partition, fn func(store.Entity) error) error {
	// The range [FenceKey, FenceKeyEnd) holds the fence and no row of the layout.
	err := store.All(ctx, st, table, part.Query(store.Query{From: rows.FenceKey, To: rows.FenceKeyEnd}), func(e store.Entity) error {
		if e.RK != rows.FenceKey {
			return nil
		}
		return fn(e)
	})
	if errors.Is(err, store.ErrTableNotFound) {
		return nil
	}
	return err
}
