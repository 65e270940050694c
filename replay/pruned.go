package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// A partition's prune horizon (SPEC §4, §6) is on its fence row; a point
// before it has lost the versions that answered it.

// CheckPruned returns a *PrunedError when seq is before the prune horizon
// of partition pk (one point read of its fence).
func CheckPruned(ctx context.Context, st store.Store, table, pk string, seq uint64) error {
	h, err := rows.ReadHorizon(ctx, st, table, pk)
	if err != nil {
		return fmt.Errorf("read the prune horizon of %s/%q: %w", table, pk, err)
	}
	if h.Pruned(seq) {
		return &PrunedError{Table: table, PK: pk, Seq: seq, Horizon: h}
	}
	return nil
}

// CheckPrunedIn is CheckPruned for a partition or a whole table: one
// range read of the fence rows.
func CheckPrunedIn(ctx context.Context, st store.Store, table string, part store.Partition, seq uint64) error {
	if !part.All {
		return CheckPruned(ctx, st, table, part.PK, seq)
	}
	return FenceRows(ctx, st, table, part, func(e store.Entity) error {
		if h := rows.HorizonOf(e.Props); h.Pruned(seq) {
			return &PrunedError{Table: table, PK: e.PK, Seq: seq, Horizon: h}
		}
		return nil
	})
}

// FenceRows calls fn with the fence row of every partition of part that
// has one (every partition the projector wrote): one range read. A missing
// table has none.
func FenceRows(ctx context.Context, st store.Store, table string, part store.Partition, fn func(store.Entity) error) error {
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
