package rows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// Columns of a partition's prune horizon, on its fence row (SPEC §4). They
// are reserved for retention.
const (
	ColPruneSeq     = "_pruneSeq"     // Edm.Int64: the horizon; states before it are pruned
	ColPruneCmd     = "_pruneCmd"     // Edm.String: the prune command that set it
	ColPruneRemoved = "_pruneRemoved" // Edm.Int64: the rows that command removed
	ColPruneTotal   = "_pruneTotal"   // Edm.Int64: the rows every prune of the partition removed
)

// Horizon is a partition's prune horizon: Seq is 0 when it was never pruned.
type Horizon struct {
	Seq     uint64
	Cmd     string
	Removed int64
	// Total is the rows removed by every prune of the partition, of which
	// Removed are the last one's: a prune of many rows is published as
	// several commands (replay's PruneConfig.MaxRows).
	Total int64
}

// Pruned reports whether the state at seq is gone: seq is before the
// horizon.
func (h Horizon) Pruned(seq uint64) bool { return seq < h.Seq }

// HorizonOf reads the horizon columns of a fence row's properties.
func HorizonOf(props edm.Entity) Horizon {
	var h Horizon
	if v, ok := props[ColPruneSeq]; ok && v.Type == edm.TypeInt64 && v.Int > 0 {
		h.Seq = uint64(v.Int)
	}
	if v, ok := props[ColPruneCmd]; ok && v.Type == edm.TypeString {
		h.Cmd = v.Str
	}
	if v, ok := props[ColPruneRemoved]; ok && v.Type == edm.TypeInt64 {
		h.Removed = v.Int
	}
	h.Total = h.Removed // a fence written before the total knows no more
	if v, ok := props[ColPruneTotal]; ok && v.Type == edm.TypeInt64 {
		h.Total = v.Int
	}
	return h
}

// Put writes h's columns into a fence row's properties; a zero horizon
// writes none.
func (h Horizon) Put(props edm.Entity) {
	if h.Seq == 0 {
		return
	}
	props[ColPruneSeq] = edm.Int64(int64(h.Seq))
	props[ColPruneCmd] = edm.String(h.Cmd)
	props[ColPruneRemoved] = edm.Int64(h.Removed)
	props[ColPruneTotal] = edm.Int64(h.Total)
}

// ReadHorizon reads the prune horizon of a partition from its fence; a
// partition (or table) without a fence was never pruned.
func ReadHorizon(ctx context.Context, s store.Store, table, pk string) (Horizon, error) {
	e, err := s.Get(ctx, table, pk, FenceKey)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
		return Horizon{}, nil
	case err != nil:
		return Horizon{}, err
	}
	return HorizonOf(e.Props), nil
}

// ReadPartition reads every tip, version and tombstone row of a partition
// (not its fence or erase markers), grouped by logical RowKey and sorted by journal sequence, oldest first
// (the tip, newest, last).
func ReadPartition(ctx context.Context, s store.Store, table, pk string) (map[string][]Row, error) {
	return readPartition(ctx, s, table, store.Query{PK: pk})
}

// ReadPartitionUpTo is ReadPartition of the rows written at or before seq
// (filtered by the store). PruneSetPartition of it at a horizon h = seq is
// PruneSetPartition of the whole partition at h: a row removed has its next
// newer row at or before h, so in the answer too, and the newest row of the
// answer is the one current at h. A prune reads only this: after the
// prunes before it, little more than what it removes.
func ReadPartitionUpTo(ctx context.Context, s store.Store, table, pk string, seq uint64) (map[string][]Row, error) {
	return readPartition(ctx, s, table, store.Query{PK: pk,
		Filter: []store.Cond{{Prop: ColSeq, Cmp: store.Le, Value: edm.Int64(int64(seq))}}})
}

func readPartition(ctx context.Context, s store.Store, table string, q store.Query) (map[string][]Row, error) {
	pk := q.PK
	byRK := make(map[string][]Row)
	err := store.All(ctx, s, table, q, func(e store.Entity) error {
		if e.RK == FenceKey || IsErasedKey(e.RK) {
			return nil // the partition's fence and erase markers: no row's version
		}
		r, err := DecodeRow(e)
		if err != nil {
			return err
		}
		byRK[r.RK] = append(byRK[r.RK], r)
		return nil
	})
	if errors.Is(err, store.ErrTableNotFound) {
		return byRK, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read partition %q of %s: %w", pk, table, err)
	}
	for _, rs := range byRK {
		// Sequences are distinct within a row's history: a command makes
		// at most one version of a row.
		slices.SortFunc(rs, func(a, b Row) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	return byRK, nil
}

// PruneSet returns the version and tombstone rows of one logical row
// (rows sorted oldest first, as ReadPartition gives them) that a prune at
// horizon h removes: those whose next newer row has _seq <= h. The newest
// row (the tip, or the last tombstone) and the row current at h always
// stay. Applying PruneSet to its own result's complement removes nothing:
// a prune is idempotent, and resuming an interrupted one removes exactly
// what the whole would have.
func PruneSet(rs []Row, h uint64) []Row {
	var out []Row
	for i := 0; i+1 < len(rs); i++ {
		if !rs[i].Tip && rs[i+1].Seq <= h {
			out = append(out, rs[i])
		}
	}
	return out
}

// PruneSetPartition is PruneSet over every row of a partition, by RowKey
// and each row's history oldest first: so the prune's transactions are the
// same however the partition was read, and an interrupted prune has
// removed the oldest part of each history, never a middle.
func PruneSetPartition(byRK map[string][]Row, h uint64) []Row {
	var out []Row
	for _, rk := range slices.Sorted(maps.Keys(byRK)) {
		out = append(out, PruneSet(byRK[rk], h)...)
	}
	return out
}
