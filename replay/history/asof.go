package history

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// AsOfRow returns row rk of partition pk as it stood at journal sequence
// seq: the newest of its versions (tip or version row) written at or before
// seq. ok is false when the row did not exist then; the Row is then zero if
// it had never existed, or its tombstone (Deleted set) if it was deleted.
//
// It costs at most three store requests and scans nothing, whatever the
// depth of the row's history: the point read of the tip, and only if the
// tip is newer than seq (or gone), a read of the first row of the range
// that starts at the version key of seq (version rows are keyed by inverted
// journal sequence, SPEC §4) and a read of the range between that key and
// the row found, empty on a store that sorts, which shows that the row is
// the newest at seq on a store that does not (projection.VersionAt,
// store.Least; Cosmos DB for Table, docs/cosmos.md). On a store that pages
// like Azure, an empty page with a continuation is followed.
//
// A returned live row has Tip set: it was the current version at seq, even
// when it is read from a version row. Its ETag is empty. A row not found
// may have been erased (SPEC §10): Erased says, at the cost of two more
// point reads.
func (r *Reader) AsOfRow(ctx context.Context, table, pk, rk string, seq uint64) (row rows.Row, ok bool, err error) {
	vt, err := r.VersionTable(ctx, table)
	if err != nil {
		return rows.Row{}, false, err
	}
	row, ok, err = rowAt(ctx, r.Store(), vt, pk, rk, seq)
	return row, ok, replay.Logical(err, table)
}

func rowAt(ctx context.Context, st store.Store, table, pk, rk string, seq uint64) (rows.Row, bool, error) {
	e, err := st.Get(ctx, table, pk, rows.TipKey(rk))
	switch {
	case err == nil:
		tip, err := rows.DecodeRow(e)
		if err != nil {
			return rows.Row{}, false, fmt.Errorf("asof %s/%q/%q: %w", table, pk, rk, err)
		}
		if tip.Seq <= seq {
			return asCurrent(tip), true, nil
		}
	case errors.Is(err, store.ErrNotFound):
	default:
		return rows.Row{}, false, fmt.Errorf("asof %s/%q/%q: %w", table, pk, rk, err)
	}
	v, ok, err := rows.VersionAt(ctx, st, table, pk, rk, seq)
	switch {
	case err != nil:
		return rows.Row{}, false, fmt.Errorf("asof %s/%q/%q: %w", table, pk, rk, err)
	case !ok:
		// No version at seq: the row did not exist, or its history there
		// was pruned (a found version is always right: a prune removes
		// the oldest part of a history, prune.go).
		return rows.Row{}, false, replay.CheckPruned(ctx, st, table, pk, seq)
	case v.Deleted:
		v.ETag = ""
		return v, false, nil
	}
	return asCurrent(v), true, nil
}

// asCurrent marks a version as the current one at some point.
func asCurrent(r rows.Row) rows.Row {
	r.Tip, r.ETag = true, ""
	return r
}

// AsOf calls fn with every row of a partition, or of the whole table
// (store.AllPartitions), as it stood at journal sequence seq, in
// (PartitionKey, RowKey) order. It reads two range scans, the tips then the version rows, filtered
// by the store to the rows written at or before seq, and keeps the newest
// version of each row per partition; rows whose newest version then is a
// tombstone are left out.
// Rows passed to fn are as AsOfRow returns them. A partition erased or
// pruned after seq answers as AsOfErasures says.
func (r *Reader) AsOf(ctx context.Context, table string, part store.Partition, seq uint64, fn func(rows.Row) error) error {
	return r.AsOfErasures(ctx, table, part, seq, nil, fn)
}

// scanAt calls fn with the newest version at or before seq of every row of
// the partition or table, tombstones included, partition by partition in
// key order.
//
// It reads every tip first, then the version rows. The projector may be
// writing meanwhile: when it replaces a row, the old tip moves to a version
// row in the same transaction as the new tip is written. Reading a row's
// tip before its versions finds the version current at seq in one of the
// two reads either way; in one scan, where version rows come first, a row
// replaced behind the scan's position would be missed. The tips at seq are
// held in memory meanwhile; the version rows stream.
func scanAt(ctx context.Context, st store.Store, table string, part store.Partition, seq uint64, fn func(rows.Row) error) error {
	filter := replay.SeqAtMost(seq)
	var tips []rows.Row
	from, to := rows.TipRange()
	err := store.All(ctx, st, table, part.Query(store.Query{From: from, To: to, Filter: filter}), func(e store.Entity) error {
		row, err := rows.DecodeRow(e)
		tips = append(tips, row)
		return err
	})
	if err != nil {
		return fmt.Errorf("asof %s/%s at %d: %w", table, part, seq, err)
	}
	best := make(map[string]rows.Row)
	keep := func(row rows.Row) {
		if b, ok := best[row.RK]; !ok || row.Version > b.Version {
			best[row.RK] = row
		}
	}
	// flush ends the partitions before pk (through it when through is
	// set): those with tips only, then the one whose versions were read.
	flush := func(cur string, through bool) error {
		for len(tips) > 0 {
			c := store.CompareKeys(tips[0].PK, cur)
			if c > 0 || c == 0 && !through {
				break
			}
			p := tips[0].PK
			for len(tips) > 0 && tips[0].PK == p {
				keep(tips[0])
				tips = tips[1:]
			}
			if p != cur {
				if err := emitPartition(best, fn); err != nil {
					return err
				}
			}
		}
		if !through {
			return nil
		}
		return emitPartition(best, fn)
	}
	var (
		cur     string
		started bool
	)
	q := part.Query(store.Query{From: rows.OldPrefix, To: "old;", Filter: filter})
	err = store.All(ctx, st, table, q, func(e store.Entity) error {
		if !started || e.PK != cur {
			if started {
				if err := flush(cur, true); err != nil {
					return err
				}
			}
			if err := flush(e.PK, false); err != nil {
				return err
			}
			cur, started = e.PK, true
		}
		row, err := rows.DecodeRow(e)
		if err != nil {
			return err
		}
		keep(row)
		return nil
	})
	if err == nil && started {
		err = flush(cur, true)
	}
	for err == nil && len(tips) > 0 {
		err = flush(tips[0].PK, true)
	}
	if err != nil {
		return fmt.Errorf("asof %s/%s at %d: %w", table, part, seq, err)
	}
	return nil
}

// emitPartition calls fn with the rows of one partition in best, in key
// order, and empties best.
func emitPartition(best map[string]rows.Row, fn func(rows.Row) error) error {
	rks := make([]string, 0, len(best))
	for rk := range best {
		rks = append(rks, rk)
	}
	sort.Slice(rks, func(i, j int) bool { return store.CompareKeys(rks[i], rks[j]) < 0 })
	defer clear(best)
	for _, rk := range rks {
		row := best[rk]
		if row.Deleted {
			row.ETag = ""
		} else {
			row = asCurrent(row)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

// History returns every stored version of a row, oldest first: version
// rows, tombstones (Deleted) and the tip (Tip) if the row exists now.
func (r *Reader) History(ctx context.Context, table, pk, rk string) ([]rows.Row, error) {
	vt, err := r.VersionTable(ctx, table)
	if err != nil {
		return nil, err
	}
	var versions []rows.Row
	err = rows.Reader{Store: r.Store()}.Versions(ctx, vt, pk, rk, func(row rows.Row) error {
		versions = append(versions, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history of %s/%q/%q: %w", table, pk, rk, err)
	}
	sort.SliceStable(versions, func(i, j int) bool { return versions[i].Version < versions[j].Version })
	if err := r.erasedHistory(ctx, table, pk, rk, versions); err != nil {
		return nil, err
	}
	return versions, nil
}

// PropChange is one property that differs between two versions of a row.
type PropChange struct {
	Name string
	// Before and After are the values; a missing side has ok false.
	Before, After     edm.Value
	HadBefore, HasNow bool
}

// Diff lists the properties that differ between before and after (either
// may be nil: an absent row), by name. A value that keeps its text but
// changes its EDM type is a change.
func Diff(before, after edm.Entity) []PropChange {
	var out []PropChange
	for name, b := range before {
		a, ok := after[name]
		if !ok || !a.Equal(b) {
			out = append(out, PropChange{Name: name, Before: b, After: a, HadBefore: true, HasNow: ok})
		}
	}
	for name, a := range after {
		if _, ok := before[name]; !ok {
			out = append(out, PropChange{Name: name, After: a, HasNow: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
