package retention

import (
	"context"
	"fmt"

	"github.com/tablejournal/tablejournal/replay"
)

var _ replay.Plan = (*PrunePlan)(nil)

// Preview says what the prunes remove: a step a partition, counted.
func (p *PrunePlan) Preview() replay.Preview {
	v := replay.Preview{Kind: "prune", Fingerprint: p.fingerprint(),
		Summary: fmt.Sprintf("prune of %s (%s): %d rows in %d partitions", p.Config.Table, p.Config.Partition, p.Rows, len(p.Partitions))}
	for _, part := range p.Partitions {
		v.Steps = append(v.Steps, replay.Step{Table: p.Config.Table, PK: part.PK, Op: "prune",
			Count: replay.Count{What: fmt.Sprintf("partition %q: rows before seq %d", part.PK, part.Horizon), N: part.Rows}})
	}
	if len(p.Partitions) == 0 {
		v.Blocked = "nothing to prune"
	}
	return v
}

// Apply plans again and, if the plan made now is this one, publishes the
// prunes partition by partition, each awaited, paced by Config.Pace
// (replay.Plan); else it publishes nothing and fails with replay.ErrStale.
// The result has a count of the rows removed per partition, from the
// outcomes. A rejected prune stops it, with replay.ErrRejected.
func (p *PrunePlan) Apply(ctx context.Context) (replay.Result, error) {
	if len(p.Partitions) > 0 {
		if err := p.pruner.NeedJournal("prune --apply"); err != nil {
			return replay.Result{}, err
		}
	}
	now, err := replay.Fresh(ctx, p, func(ctx context.Context) (*PrunePlan, error) {
		return p.pruner.planPrune(ctx, p.Config, p.timeHorizon)
	})
	if err != nil {
		return replay.Result{}, err
	}
	return now.publish(ctx)
}

// fingerprint names the plan by its partitions, horizons and counts.
func (p *PrunePlan) fingerprint() string {
	parts := []string{p.Config.Table, p.Config.Partition.String()}
	for _, part := range p.Partitions {
		parts = append(parts, fmt.Sprintf("%s\x00%d\x00%d\x00%v", part.PK, part.Horizon, part.Rows, part.Horizons))
	}
	return replay.Fingerprint(parts...)
}
