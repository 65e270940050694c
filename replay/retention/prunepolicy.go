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
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// PruneConfig says which history a prune removes: versions older than
// Keep, beyond the newest KeepVersions of each row, or before the
// sequence Before. With several, a version stays if any of them keeps it
// (the lowest horizon wins).
type PruneConfig struct {
	// Table is the table pruned. Required.
	Table string
	// Partition is one partition, or store.AllPartitions.
	Partition store.Partition
	// Keep keeps the versions that were current at some point of the last
	// Keep: the horizon is the journal sequence at now − Keep, resolved
	// when the plan is made.
	Keep time.Duration
	// KeepVersions keeps at least the newest KeepVersions versions of every
	// row (tombstones count; 1 keeps only the tip or the last tombstone).
	KeepVersions int
	// Before is an explicit horizon, a journal sequence.
	Before uint64
	// Pace is the pause between two prune commands when applying, so
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

// PrunePartition is what a prune plan removes in one partition.
type PrunePartition struct {
	PK string
	// Horizon is the partition's horizon under the policy; Rows the rows
	// before it that go.
	Horizon uint64
	Rows    int64
	// Horizons are those of its prune commands, rising, the last Horizon
	// (see PruneConfig.MaxRows).
	Horizons []uint64
}

// PrunePlan is the prunes a policy calls for: a replay.Plan
// (prunepreview.go).
type PrunePlan struct {
	Config PruneConfig
	// Partitions are those with something to remove, in key order.
	Partitions []PrunePartition
	// Rows sums their rows.
	Rows int64

	timeHorizon uint64 // Keep resolved when planned
	pruner      *Pruner
}

// PlanPrune finds, partition by partition, the history the policy lets go,
// and changes nothing. The plan's Apply publishes one prune command per
// horizon of each partition, waits for its outcome, and pauses Pace
// before the next. Pruning is resumable: a partition already pruned to its
// horizon has nothing left to remove and is left out of a plan made again,
// and command IDs are a function of table, partition and horizon, so a
// prune published twice applies once.
func (r *Pruner) PlanPrune(ctx context.Context, cfg PruneConfig) (*PrunePlan, error) {
	if cfg.Table == "" {
		return nil, errors.New("prune: no table")
	}
	if cfg.Keep <= 0 && cfg.KeepVersions <= 0 && cfg.Before == 0 {
		return nil, errors.New("prune: no policy: give Keep, KeepVersions or Before")
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
			return nil, fmt.Errorf("prune: the journal sequence %v ago: %w", cfg.Keep, err)
		}
		timeHorizon = seq // 0: nothing is older than Keep
	}
	return r.planPrune(ctx, cfg, timeHorizon)
}

// planPrune is PlanPrune with Keep resolved to timeHorizon.
func (r *Pruner) planPrune(ctx context.Context, cfg PruneConfig, timeHorizon uint64) (*PrunePlan, error) {
	p := &PrunePlan{Config: cfg, timeHorizon: timeHorizon, pruner: r}
	if cfg.Keep > 0 && timeHorizon == 0 {
		return p, nil // nothing is older than Keep
	}
	// A plain table's versions are in its history table (SPEC §4); the
	// table itself holds none and a prune never touches it.
	vt, err := r.VersionTable(ctx, cfg.Table)
	if err != nil {
		return nil, fmt.Errorf("prune %s: %w", cfg.Table, err)
	}
	pks, err := prunePartitions(ctx, r.Store(), vt, cfg.Partition)
	if err != nil {
		return nil, fmt.Errorf("prune %s: %w", cfg.Table, err)
	}
	for _, pk := range pks {
		byRK, err := rows.ReadPartition(ctx, r.Store(), vt, pk)
		if err != nil {
			return nil, err
		}
		h := policyHorizon(byRK, cfg.Before, timeHorizon, cfg.KeepVersions)
		n := int64(len(rows.PruneSetPartition(byRK, h)))
		if h == 0 || n == 0 {
			continue
		}
		p.Partitions = append(p.Partitions, PrunePartition{PK: pk, Horizon: h, Rows: n, Horizons: pruneSteps(byRK, h, cfg.MaxRows)})
		p.Rows += n
	}
	return p, nil
}

// publish publishes the plan's prunes, partition by partition, each
// awaited, paced.
func (p *PrunePlan) publish(ctx context.Context) (replay.Result, error) {
	var res replay.Result
	r := p.pruner
	for _, part := range p.Partitions {
		removed := int64(0)
		for _, h := range part.Horizons {
			if len(res.Published) > 0 {
				if err := retry.Sleep(ctx, p.Config.Pace); err != nil {
					return res, err
				}
			}
			pub, err := r.publishPrune(ctx, p.Config.Table, part.PK, h)
			if pub.ID != "" {
				res.Published = append(res.Published, pub)
			}
			if err != nil {
				return res, err
			}
			removed += pub.Outcome.Pruned
		}
		res.Counts = append(res.Counts, replay.Count{What: fmt.Sprintf("partition %q: rows removed", part.PK), N: removed})
	}
	return res, nil
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
// outcome; the result names the command once it is published.
func (r *Pruner) publishPrune(ctx context.Context, table, pk string, h uint64) (replay.Published, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, replay.DefaultAwait)
		defer cancel()
	}
	c := &events.Command{ID: pruneID(table, pk, h), Table: table, PK: pk, Issuer: r.Config().Issuer,
		Prune: &events.Prune{Horizon: h}}
	pr, err := journal.NewWriter(r.JetStream(), r.Journal().Name()).Publish(ctx, c)
	if err != nil {
		return replay.Published{}, fmt.Errorf("prune %s/%q: %w", table, pk, err)
	}
	pub := replay.Published{ID: c.ID, Seq: pr.Seq, Duplicate: pr.Duplicate}
	pub.Outcome, err = outcomes.NewReader(r.JetStream()).Await(ctx, c.ID, pr.Seq)
	if err != nil {
		return pub, fmt.Errorf("%w (is the projector running?)", err)
	}
	if pub.Outcome.Status == wire.StatusRejected {
		return pub, fmt.Errorf("prune %s/%q: %w: %s", table, pk, replay.ErrRejected, pub.Outcome.Reason)
	}
	return pub, nil
}
