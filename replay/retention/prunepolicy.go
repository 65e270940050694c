package retention

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// PruneConfig says which history a Prune removes: versions older than
// Keep, beyond the newest KeepVersions of each row, or before the
// sequence Before. With several, a version stays if any of them keeps it
// (the lowest horizon wins).
type PruneConfig struct {
	// Table is the table pruned. Required.
	Table string
	// Partition is one partition, or store.AllPartitions.
	Partition store.Partition
	// Keep keeps the versions that were current at some point of the last
	// Keep: the horizon is the journal sequence at now − Keep.
	Keep time.Duration
	// KeepVersions keeps at least the newest KeepVersions versions of every
	// row (tombstones count; 1 keeps only the tip or the last tombstone).
	KeepVersions int
	// Before is an explicit horizon, a journal sequence.
	Before uint64
	// Apply publishes the prunes; otherwise Prune only counts (a dry run).
	Apply bool
	// Pace is the pause between two partitions' prunes when applying, so
	// that live traffic keeps the store's throughput. If zero, 100 ms.
	Pace time.Duration
	// MaxRows bounds the rows one prune command removes: a partition with
	// more to remove gets several prunes with rising horizons, so that no
	// one prune holds its shard long (the projector applies a shard's
	// commands in order). If zero, DefaultPruneMaxRows.
	MaxRows int
	// Now is the clock for Keep; if nil, time.Now.
	Now func() time.Time
}

// DefaultPruneMaxRows is PruneConfig.MaxRows by default: about ten
// transactions, well under a second on Azure.
const DefaultPruneMaxRows = 1000

// PrunePartition is what a Prune did, or would do, in one partition.
type PrunePartition struct {
	PK string
	// Horizon is the partition's horizon under the policy; Rows the rows
	// it removes (counted on a dry run, from the outcome when applied).
	Horizon uint64
	Rows    int64
	// Prunes is the number of prune commands (see PruneConfig.MaxRows).
	Prunes int
	// Command is the last prune's command ID, and Outcome its outcome,
	// when applied.
	Command string
	Outcome *wire.Outcome
}

// PruneStats sums a Prune.
type PruneStats struct {
	Partitions int   // partitions with something to remove
	Rows       int64 // rows removed (or, on a dry run, that would be)
}

// Prune finds, partition by partition, the history the policy lets go and
// calls fn for each partition with something to remove; with Apply it
// publishes one prune command per such partition, waits for its outcome,
// and pauses Pace before the next. It is resumable: a partition already
// pruned to its horizon has nothing left to remove and is skipped, and
// command IDs are a function of table, partition and horizon, so a prune
// published twice applies once.
func (r *Pruner) Prune(ctx context.Context, cfg PruneConfig, fn func(PrunePartition) error) (PruneStats, error) {
	var st PruneStats
	if cfg.Table == "" {
		return st, errors.New("prune: no table")
	}
	if cfg.Keep <= 0 && cfg.KeepVersions <= 0 && cfg.Before == 0 {
		return st, errors.New("prune: no policy: give Keep, KeepVersions or Before")
	}
	if cfg.Apply {
		if err := r.NeedJournal("prune --apply"); err != nil {
			return st, err
		}
	}
	if cfg.Pace == 0 {
		cfg.Pace = 100 * time.Millisecond
	}
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = DefaultPruneMaxRows
	}
	timeHorizon := uint64(0) // 0: no limit from Keep
	if cfg.Keep > 0 {
		now := time.Now
		if cfg.Now != nil {
			now = cfg.Now
		}
		seq, err := r.Resolve(ctx, replay.Time(now().Add(-cfg.Keep)))
		if err != nil {
			return st, fmt.Errorf("prune: the journal sequence %v ago: %w", cfg.Keep, err)
		}
		if seq == 0 {
			return st, nil // nothing is older than Keep
		}
		timeHorizon = seq
	}
	// A plain table's versions are in its history table (SPEC §4); the
	// table itself holds none and a prune never touches it.
	vt, err := r.VersionTable(ctx, cfg.Table)
	if err != nil {
		return st, fmt.Errorf("prune %s: %w", cfg.Table, err)
	}
	pks, err := prunePartitions(ctx, r.Store(), vt, cfg.Partition)
	if err != nil {
		return st, fmt.Errorf("prune %s: %w", cfg.Table, err)
	}
	published := false
	for _, pk := range pks {
		byRK, err := rows.ReadPartition(ctx, r.Store(), vt, pk)
		if err != nil {
			return st, err
		}
		h := policyHorizon(byRK, cfg.Before, timeHorizon, cfg.KeepVersions)
		n := int64(len(rows.PruneSetPartition(byRK, h)))
		if h == 0 || n == 0 {
			continue
		}
		steps := pruneSteps(byRK, h, cfg.MaxRows)
		p := PrunePartition{PK: pk, Horizon: h, Rows: n, Prunes: len(steps)}
		if cfg.Apply {
			p.Rows = 0
			for _, step := range steps {
				if published {
					if err := retry.Sleep(ctx, cfg.Pace); err != nil {
						return st, err
					}
				}
				o, err := r.publishPrune(ctx, cfg.Table, pk, step)
				if err != nil {
					return st, err
				}
				published = true
				p.Command, p.Outcome = o.ID, &o
				p.Rows += o.Pruned
			}
		}
		st.Partitions++
		st.Rows += p.Rows
		if fn != nil {
			if err := fn(p); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// prunePartitions lists the partitions to prune: every partition the
// projector wrote has a fence row.
func prunePartitions(ctx context.Context, st store.Store, table string, part store.Partition) ([]string, error) {
	if !part.All {
		return []string{part.PK}, nil
	}
	var pks []string
	err := replay.FenceRows(ctx, st, table, part, func(e store.Entity) error {
		pks = append(pks, e.PK)
		return nil
	})
	slices.SortFunc(pks, store.CompareKeys)
	return pks, err
}

// policyHorizon is the lowest of the horizons the policy gives a
// partition (0 for none): Before, the time horizon, and the highest
// horizon that keeps keepVersions versions of every row.
func policyHorizon(byRK map[string][]rows.Row, before, timeH uint64, keepVersions int) uint64 {
	h := uint64(0)
	lower := func(x uint64) {
		if h == 0 || x < h {
			h = x
		}
	}
	if before > 0 {
		lower(before)
	}
	if timeH > 0 {
		lower(timeH)
	}
	if keepVersions > 0 {
		// A row of L versions keeps r[L-N] only if r[L-N+1] is newer than
		// the horizon; with N = 1 everything but the newest may go.
		vh := uint64(0)
		for _, rs := range byRK {
			vh = max(vh, rs[len(rs)-1].Seq)
		}
		for _, rs := range byRK {
			if l := len(rs); keepVersions >= 2 && l >= keepVersions {
				vh = min(vh, rs[l-keepVersions+1].Seq-1)
			}
		}
		lower(vh)
	}
	return h
}

// pruneSteps splits a prune to horizon h into rising horizons, each
// removing about maxRows rows more than the one before, the last h. A row
// goes at the horizon its next newer version was written at.
func pruneSteps(byRK map[string][]rows.Row, h uint64, maxRows int) []uint64 {
	var at []uint64
	for _, rs := range byRK {
		for i := 0; i+1 < len(rs) && rs[i+1].Seq <= h; i++ {
			if !rs[i].Tip {
				at = append(at, rs[i+1].Seq)
			}
		}
	}
	slices.Sort(at)
	var steps []uint64
	for k := maxRows; k < len(at); k += maxRows {
		if s := at[k-1]; len(steps) == 0 || s > steps[len(steps)-1] {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 || steps[len(steps)-1] < h {
		steps = append(steps, h)
	}
	return steps
}

// pruneID is the prune command's ID: a function of table, partition and
// horizon, so that a prune published again is one command.
func pruneID(table, pk string, h uint64) string {
	sum := sha256.Sum256([]byte(pk))
	return fmt.Sprintf("prune-%s-%s-%d", table, hex.EncodeToString(sum[:8]), h)
}

// publishPrune publishes the prune of one partition and waits for its
// outcome.
func (r *Pruner) publishPrune(ctx context.Context, table, pk string, h uint64) (wire.Outcome, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, replay.DefaultAwait)
		defer cancel()
	}
	c := &events.Command{ID: pruneID(table, pk, h), Table: table, PK: pk, Issuer: r.Config().Issuer,
		Prune: &events.Prune{Horizon: h}}
	pr, err := journal.NewWriter(r.JetStream(), r.Journal().Name()).Publish(ctx, c)
	if err != nil {
		return wire.Outcome{}, fmt.Errorf("prune %s/%q: %w", table, pk, err)
	}
	o, err := journal.NewOutcomes(r.JetStream()).Await(ctx, c.ID, pr.Seq)
	if err != nil {
		return o, fmt.Errorf("%w (is the projector running?)", err)
	}
	if o.Status == wire.StatusRejected {
		return o, fmt.Errorf("prune %s/%q: %w: %s", table, pk, replay.ErrRejected, o.Reason)
	}
	return o, nil
}
