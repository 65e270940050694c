package erasure

import (
	"context"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/wire"
)

var _ replay.Plan = (*Plan)(nil)

// Preview says what the erase removes, by place: counts, never values.
func (p *Plan) Preview() replay.Preview {
	t := p.Target
	what, rk := "partition", ""
	if t.RK != nil {
		what, rk = "row", *t.RK
	}
	step := func(op, what string, n int) replay.Step {
		return replay.Step{Table: t.Table, PK: t.PK, RK: rk, Op: op, Count: replay.Count{What: what, N: int64(n)}}
	}
	v := replay.Preview{Kind: "erase", Fingerprint: p.fingerprint(),
		Summary: fmt.Sprintf("erase of a %s of %s (key sha256 %s)", what, t.Table, t.SHA256()),
		Steps: []replay.Step{step("erase", "table rows", p.TableRows), step("erase", "journal commands", len(p.Journal)),
			step("", "journal commands kept (they touched other rows too)", len(p.Kept)),
			step("erase", "change events", len(p.Changes)), step("erase", "outcomes", len(p.Outcomes))}}
	if p.Behind > 0 {
		v.Steps = append(v.Steps, step("erase", "messages of the partition recorded behind the journal", p.Behind))
	}
	if p.Empty() {
		v.Blocked = "nothing of the key is left"
	}
	return v
}

// Apply plans again and, if the plan made now is this one, erases the key
// everywhere as EraseKey does (replay.Plan); else it changes nothing and
// fails with replay.ErrStale. The result's Receipt is the *Receipt, also
// with an error once the erase was published.
func (p *Plan) Apply(ctx context.Context) (replay.Result, error) {
	if err := p.eraser.checkDeletable(ctx); err != nil {
		return replay.Result{}, err
	}
	now, err := replay.Fresh(ctx, p, func(ctx context.Context) (*Plan, error) {
		return p.eraser.PlanErase(ctx, p.Target)
	})
	if err != nil {
		return replay.Result{}, err
	}
	rec, err := p.eraser.erase(ctx, now, time.Now)
	if rec == nil {
		return replay.Result{}, err
	}
	r := rec.Removed
	res := replay.Result{Receipt: rec,
		Published: []replay.Published{{ID: rec.EraseID, Seq: rec.EraseSeq,
			Outcome: wire.Outcome{ID: rec.EraseID, Seq: rec.EraseSeq, Table: rec.Table, PK: p.Target.PK, Status: wire.StatusApplied}}},
		Counts: []replay.Count{{What: "table rows removed", N: int64(r.TableRows)},
			{What: "journal messages removed", N: int64(r.JournalMsgs)}, {What: "change events removed", N: int64(r.ChangeEvents)},
			{What: "outcomes removed", N: int64(r.Outcomes)}}}
	if r.BehindEntries > 0 {
		res.Counts = append(res.Counts, replay.Count{What: "messages of the partition recorded behind the journal removed", N: int64(r.BehindEntries)})
	}
	return res, err
}

// fingerprint names the plan by the key and what it found of it.
func (p *Plan) fingerprint() string {
	return replay.Fingerprint(p.Target.SHA256(), p.EraseID, fmt.Sprint(p.EraseSeq, p.TableRows, p.Journal, p.Kept, p.Changes, p.Outcomes, p.Behind))
}
