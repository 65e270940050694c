package repair

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

var _ replay.Plan = (*Plan)(nil)

// Preview says what the plan would do: a step a row, with the values now
// and after, and the command that carries it.
func (p *Plan) Preview() replay.Preview {
	v := replay.Preview{Kind: string(p.Kind), Summary: p.summary(), Steps: make([]replay.Step, len(p.Steps)),
		Blocked: p.blocked(), Fingerprint: p.fingerprint()}
	for i, s := range p.Steps {
		st := replay.Step{Table: s.Table, PK: s.PK, RK: s.RK, Op: string(s.Op), Conflict: s.Conflict}
		if s.Exists {
			st.Before = s.Current.Props
		}
		if s.TargetExists {
			st.After = s.Target.Props
		}
		if c, ok := p.Carrier(s); ok {
			st.Command = p.Commands[c].ID
		}
		v.Steps[i] = st
	}
	return v
}

// Apply plans again and, if the plan made now is this one, publishes its
// commands through the journal as ordinary commands and waits for their
// outcomes (replay.Plan). A plan the rows changed under is refused with
// replay.ErrStale, a blocked plan with ErrConflicts, and both publish
// nothing. If a command is rejected (a guard failed: the rows changed
// again after the check), the error wraps replay.ErrRejected; the results
// say which.
func (p *Plan) Apply(ctx context.Context) (replay.Result, error) {
	if p.planner == nil {
		return replay.Result{}, errors.New("apply: a plan must be made by a Planner")
	}
	now, err := replay.Fresh(ctx, p, p.again)
	if err != nil {
		return replay.Result{}, err
	}
	res, err := p.planner.publish(ctx, now)
	return replay.Result{Published: res}, err
}

// again makes the plan again, over the tables as they are now.
func (p *Plan) again(ctx context.Context) (*Plan, error) {
	if p.Kind == KindUndo {
		return p.planner.PlanUndo(ctx, p.Of, UndoOptions{Force: p.Force})
	}
	return p.planner.PlanRestore(ctx, p.Table, store.Partition{PK: p.PK, All: p.AllPartitions}, p.Seq)
}

// Carrier is the index in Commands of the command that carries step s;
// false when none does (the row is already at its target, or a conflict
// left out).
func (p *Plan) Carrier(s Step) (int, bool) {
	found, at := false, 0
	if s.Op == "" {
		return 0, false
	}
	for i, c := range p.Commands {
		for _, op := range c.Ops {
			if c.PK == s.PK && op.RK == s.RK {
				found, at = true, i // the last one, should two carry it
			}
		}
	}
	return at, found
}

// summary names the plan: "undo of c3 (seq 3, orders "p")", "restore of
// orders "p" to seq 1".
func (p *Plan) summary() string {
	if p.Kind == KindUndo {
		return fmt.Sprintf("undo of %s (seq %d, %s %q)", p.Of, p.Seq, p.Table, p.PK)
	}
	scope := p.Table
	if !p.AllPartitions {
		scope += fmt.Sprintf(" %q", p.PK)
	}
	return fmt.Sprintf("restore of %s to seq %d", scope, p.Seq)
}

// blocked says why Apply would change nothing.
func (p *Plan) blocked() string {
	switch {
	case p.Blocked():
		return fmt.Sprintf("%d rows were changed again by later commands; undo with force to put them back all the same", len(p.Conflicts()))
	case p.Kind == KindUndo && p.Status != wire.StatusApplied:
		return fmt.Sprintf("the command was %s: there is nothing to undo", p.Status)
	case len(p.Commands) == 0:
		return "nothing to do"
	}
	return ""
}

// fingerprint names the plan by its scope, the rows as it found them and
// the commands it publishes.
func (p *Plan) fingerprint() string {
	parts := []string{string(p.Kind), p.Of, p.Table, p.PK, fmt.Sprint(p.AllPartitions, p.Seq, p.Force, p.Status)}
	for _, s := range p.Steps {
		parts = append(parts, fmt.Sprintf("%q %q %s %v %v %v %d %d %v %d %d", s.PK, s.RK, s.Op, s.Conflict, s.Reverted,
			s.Exists, s.Current.Version, s.Current.Seq, s.TargetExists, s.Target.Version, s.Target.Seq))
	}
	for _, c := range p.Commands {
		parts = append(parts, c.ID)
	}
	return replay.Fingerprint(parts...)
}
