package rebuild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// PartitionStats says what RebuildPartition did.
type PartitionStats struct {
	Table, PK string
	// Removed counts the entities of the partition deleted before the
	// journal was applied again; To is the last journal sequence read.
	Removed int64
	To      uint64
	// Commands counts the partition's journal messages applied, by outcome.
	Commands, Applied, Rejected, Duplicates int64
	Elapsed                                 time.Duration
	// Cleared says the partition's entry in the record of partitions
	// behind (package lost) was removed.
	Cleared bool
}

// RebuildPartition rebuilds one partition of a live table in place from
// the journal: it deletes every entity of the partition (rows, history,
// fence) and applies the partition's journal messages again, from the
// first to the head, through projection.Applier. It is the way back for a
// partition the store lost confirmed writes of (the projector reports
// them: docs/operating.md, "When the store lost writes"); once it is
// rebuilt, its entry in the record of partitions behind is removed.
//
// No projector may apply the partition meanwhile: stop the projectors
// first. A command ID applied in another partition is not known here
// (RememberIDs covers this partition's messages), as in a rebuild of a
// table, which knows its own table's.
func (r *Rebuilder) RebuildPartition(ctx context.Context, table, pk string) (PartitionStats, error) {
	start := time.Now()
	st := PartitionStats{Table: table, PK: pk}
	if err := r.NeedJournal("rebuild"); err != nil {
		return st, err
	}
	head, err := r.Journal().Head(ctx)
	if err != nil {
		return st, err
	}
	st.To = head
	// The partition's lower-case subject and the table as spelled, which a
	// journal written before holds (wire.PartitionFilters).
	filters := wire.PartitionFilters(table, pk)
	n, err := r.countMessages(ctx, filters)
	if err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	if n == 0 {
		return st, fmt.Errorf("rebuild: %w: %s has no partition %q in journal %s", ErrUnknownTable, table, pk, r.Journal().Name())
	}
	if err := retention.NewCompactor(r.Source).CheckHorizon(ctx, table, 1, head); err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	if err := r.checkNotTrimmed(ctx, 1); err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	layout, err := r.Layout(ctx, table)
	if err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	vt, err := rows.VersionTable(table, layout)
	if err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	// A plain table's current rows stay: the partition's history is
	// rebuilt, and each row of the table is brought forward to its tip
	// (never back) as the commands apply again.
	if st.Removed, err = clearPartition(ctx, r.Store(), vt, pk); err != nil {
		return st, fmt.Errorf("rebuild: clear %s/%q: %w", vt, pk, err)
	}
	applier := projection.NewApplier(r.Store(), projection.ApplierConfig{RememberIDs: true, Layouts: fixedLayout(layout)})
	var c counts
	hooks := projection.Hooks{BeforeCommit: c.count, AfterCommit: c.count}
	var batch []projection.Entry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := applier.Apply(ctx, table, pk, batch, hooks)
		st.Commands += int64(len(batch))
		batch = batch[:0]
		return err
	}
	err = r.Journal().ReadAny(ctx, 1, head, filters, func(m journal.Msg) error {
		_, _, e := projection.EntryFromMsg(m)
		batch = append(batch, e)
		if len(batch) >= 1024 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	st.Applied, st.Rejected, st.Duplicates = c.applied.Load(), c.rejected.Load(), c.dups.Load()
	st.Elapsed = time.Since(start)
	if err != nil {
		return st, fmt.Errorf("rebuild %s/%q: %w", table, pk, err)
	}
	rec, err := r.record(ctx)
	if err != nil {
		return st, err
	}
	if st.Cleared, err = rec.Remove(ctx, table, pk, 0); err != nil {
		return st, fmt.Errorf("rebuilt %s/%q: %w", table, pk, err)
	}
	return st, nil
}

// record opens the record of partitions behind of the projector whose
// consumers the Source names.
func (r *Rebuilder) record(ctx context.Context) (*lost.Record, error) {
	return lost.Open(ctx, r.JetStream(), r.Journal().Name(), r.Config().Durable)
}

// BehindStats says what RebuildBehind did.
type BehindStats struct {
	// Rebuilt lists the partitions rebuilt, by table and key.
	Rebuilt []PartitionStats
	// Left lists the partitions still recorded behind afterwards: those
	// whose rebuild failed, and any recorded meanwhile.
	Left    []wire.BehindPartition
	Elapsed time.Duration
}

// RebuildBehind rebuilds in place every partition of table ("" : of every
// table) recorded behind the journal (package lost), Config.Workers at
// once with RebuildPartition, and removes each one's entry. A partition that
// fails, or whose key is no longer in the journal (PKErased), is left recorded and the others are still rebuilt; the error joins
// the failures. As for RebuildPartition, no projector may run meanwhile.
func (r *Rebuilder) RebuildBehind(ctx context.Context, table string) (BehindStats, error) {
	start := time.Now()
	var st BehindStats
	if err := r.NeedJournal("rebuild"); err != nil {
		return st, err
	}
	rec, err := r.record(ctx)
	if err != nil {
		return st, err
	}
	todo, err := rec.List(ctx, table)
	if err != nil {
		return st, err
	}
	var (
		mu   sync.Mutex
		errs []error
		g    errgroup.Group
	)
	g.SetLimit(r.Config().Workers)
	for _, e := range todo {
		if e.Held() {
			continue // not behind: held by a foreign row (projector resume)
		}
		if e.PKErased {
			// The entry holds the partition key only hashed, and no
			// journal message of the partition is left to read it from.
			mu.Lock()
			errs = append(errs, fmt.Errorf("rebuild %s/(erased): no journal message of the partition is left, its key is unknown (entry %s of %s)", e.Table, e.Key, rec.Name()))
			mu.Unlock()
			continue
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			ps, err := r.RebuildPartition(ctx, e.Table, e.PK)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				st.Rebuilt = append(st.Rebuilt, ps)
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	slices.SortFunc(st.Rebuilt, func(a, b PartitionStats) int { return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.PK, b.PK)) })
	left, err := rec.List(context.WithoutCancel(ctx), table)
	if err != nil {
		errs = append(errs, err)
	}
	for _, e := range left {
		if !e.Held() {
			st.Left = append(st.Left, e.BehindPartition)
		}
	}
	st.Elapsed = time.Since(start)
	return st, errors.Join(errs...)
}

// clearPartition deletes every entity of a partition, in transactions of
// at most the store's limit, and returns how many it deleted.
func clearPartition(ctx context.Context, s store.Store, table, pk string) (int64, error) {
	ents, err := store.Collect(ctx, s, table, store.Query{PK: pk})
	if errors.Is(err, store.ErrTableNotFound) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	var n int64
	for len(ents) > 0 {
		k := min(len(ents), events.MaxStoreOpsPerTx)
		ops := make([]store.Op, k)
		for i, e := range ents[:k] {
			ops[i] = store.Op{Kind: store.Delete, RK: e.RK}
		}
		if _, err := s.Transact(ctx, table, pk, ops); err != nil {
			return n, err
		}
		n += int64(k)
		ents = ents[k:]
	}
	return n, nil
}
