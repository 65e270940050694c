package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/replay"
)

var _ replay.Plan = (*CompactPlan)(nil)

// Preview says what the compaction trims: one step, counted.
func (p *CompactPlan) Preview() replay.Preview {
	h := p.Horizon
	v := replay.Preview{Kind: "compact", Fingerprint: p.fingerprint(),
		Summary: fmt.Sprintf("compact of %s below seq %d (snapshot %s, sha256 %s)", h.Table, h.Seq, h.Snapshot, shortHash(h.SHA256)),
		Steps: []replay.Step{{Table: h.Table, Op: "trim",
			Count: replay.Count{What: fmt.Sprintf("commands of %s before seq %d", h.Table, h.Seq), N: p.Commands}}}}
	if p.Previous == h.Seq && p.Commands == 0 {
		v.Blocked = "nothing to do: the horizon is recorded at this snapshot already, and nothing is left before it"
	}
	return v
}

// Apply plans again and, if the plan made now is this one, records the
// horizon in the journal's metadata and then purges the table's commands
// before it (replay.Plan); else it changes nothing and fails with
// replay.ErrStale. The result's Receipt is the Horizon recorded.
func (p *CompactPlan) Apply(ctx context.Context) (replay.Result, error) {
	now, err := replay.Fresh(ctx, p, func(ctx context.Context) (*CompactPlan, error) {
		return p.compactor.PlanCompact(ctx, CompactConfig{Snapshot: p.snapshot, Location: p.Horizon.Snapshot})
	})
	if err != nil {
		return replay.Result{}, err
	}
	h := now.Horizon
	h.Recorded = time.Now().UTC()
	res := replay.Result{Receipt: h}
	purged, err := p.compactor.recordAndPurge(ctx, now.stream, h)
	if purged {
		res.Counts = []replay.Count{{What: fmt.Sprintf("commands of %s trimmed before seq %d", h.Table, h.Seq), N: now.Commands}}
	}
	return res, err
}

// fingerprint names the plan by its horizon, the one before, and the
// commands it trims.
func (p *CompactPlan) fingerprint() string {
	h := p.Horizon
	return replay.Fingerprint(h.Table, fmt.Sprint(h.Seq), h.Snapshot, h.SHA256, fmt.Sprint(p.Previous, p.Commands))
}
