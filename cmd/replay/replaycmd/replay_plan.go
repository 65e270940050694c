package replaycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/entityfmt"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

// planRun says how runPlan shows one kind of replay.Plan.
type planRun struct {
	// apply applies the plan (--apply); otherwise it is only printed.
	apply bool
	// timeout, if not zero, bounds Apply; timedOut is then the error when
	// it runs out (nil keeps Apply's).
	timeout  time.Duration
	timedOut error
	// refuse, if set, refuses the plan: it is printed, not applied, and
	// the command fails with refuse.
	refuse error
	// show is the plan's output, dry (res nil) or applied (with Apply's
	// error); nil prints nothing.
	show func(res *replay.Result, err error) cli.Result
}

// runPlan drives every plan of the replay command (undo, restore, prune,
// erase, compact) the same way: it prints the plan, and with --apply
// applies it and prints what it did. A refusal exits 3 (refused).
func runPlan(ctx context.Context, b *replayBase, stdio cli.IO, p replay.Plan, r planRun) error {
	if !r.apply || r.refuse != nil {
		cli.Render(stdio.Stdout, b.asJSON, r.show(nil, nil))
		return refused(r.refuse)
	}
	actx := ctx
	if r.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	res, err := p.Apply(actx)
	if err != nil && r.timedOut != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = r.timedOut
	}
	if out := r.show(&res, err); out != nil {
		cli.Render(stdio.Stdout, b.asJSON, out)
	}
	return refused(err)
}

// runRepair runs an undo or restore plan: a blocked one is refused, and
// --timeout bounds the wait for its outcomes.
func runRepair(ctx context.Context, b *replayBase, stdio cli.IO, f planFlags, p *repair.Plan) error {
	if f.apply && f.timeout <= 0 {
		return cli.UsageError(errors.New("--timeout must be positive"))
	}
	r := planRun{apply: f.apply, timeout: f.timeout,
		timedOut: fmt.Errorf("%s: no outcome for %s within --timeout %s: is a projector running? (applying again is safe: the commands are deduplicated)",
			p.Kind, cli.Plural(len(p.Commands), "command"), f.timeout),
		show: func(res *replay.Result, err error) cli.Result {
			if res == nil {
				return newPlanResult(p, nil)
			}
			if err == nil || errors.Is(err, replay.ErrRejected) {
				return newPlanResult(p, res.Published)
			}
			return nil
		}}
	if p.Blocked() {
		r.refuse = fmt.Errorf("undo %s: %w: %s; --force includes them", p.Of, repair.ErrConflicts, cli.Plural(len(p.Conflicts()), "row"))
	}
	return runPlan(ctx, b, stdio, p, r)
}

// planResult is an undo or restore plan, with the outcomes of its
// commands once applied (replay undo, replay restore).
type planResult struct {
	Applied      bool            `json:"applied"` // this plan's commands were published
	Commands     int             `json:"commands"`
	Conflicts    int             `json:"conflicts"`
	Kind         repair.PlanKind `json:"kind"`
	PK           *string         `json:"pk"` // null: the whole table
	Published    []publishedJSON `json:"published,omitempty"`
	Seq          uint64          `json:"seq"`
	Steps        []planStep      `json:"steps"`
	Table        string          `json:"table"`
	Undoes       *string         `json:"undoes,omitempty"` // the undone command, its status and reason
	UndoneReason string          `json:"undoneReason,omitempty"`
	UndoneStatus *wire.Status    `json:"undoneStatus,omitempty"`

	p   *repair.Plan
	res []replay.Published
}

// planStep is a plan step in JSON output.
type planStep struct {
	PK        string           `json:"pk"`
	RK        string           `json:"rk"`
	Op        events.OpKind    `json:"op,omitempty"`
	IfVersion *int64           `json:"ifVersion,omitempty"`
	Conflict  bool             `json:"conflict,omitempty"`
	Reverted  bool             `json:"reverted,omitempty"`
	Current   *replayRow       `json:"current,omitempty"`
	Undone    *replayRow       `json:"undone,omitempty"`
	Target    *replayRow       `json:"target,omitempty"`
	Command   string           `json:"command,omitempty"`
	Outcome   *cli.OutcomeJSON `json:"outcome,omitempty"`
}

// publishedJSON is a command of an applied plan.
type publishedJSON struct {
	Duplicate bool            `json:"duplicate"`
	ID        string          `json:"id"`
	Outcome   cli.OutcomeJSON `json:"outcome"`
	Seq       uint64          `json:"seq"`
}

// newPlanResult builds the result of plan p; res is nil for a dry run.
func newPlanResult(p *repair.Plan, res []replay.Published) planResult {
	r := planResult{Applied: res != nil, Commands: len(p.Commands), Conflicts: len(p.Conflicts()), Kind: p.Kind,
		Seq: p.Seq, Steps: make([]planStep, len(p.Steps)), Table: p.Table, p: p, res: res}
	if !p.AllPartitions {
		r.PK = &p.PK
	}
	if p.Kind == repair.KindUndo {
		r.Undoes, r.UndoneStatus, r.UndoneReason = &p.Of, &p.Status, p.Reason
	}
	for i, s := range p.Steps {
		r.Steps[i] = r.step(s)
	}
	for _, a := range res {
		r.Published = append(r.Published, publishedJSON{Duplicate: a.Duplicate, ID: a.ID, Outcome: cli.OutcomeJSON(a.Outcome), Seq: a.Seq})
	}
	return r
}

// step is one step in JSON: the rows it compares and the command that
// carries it.
func (r planResult) step(s repair.Step) planStep {
	ps := planStep{PK: s.PK, RK: s.RK, Op: s.Op, IfVersion: s.IfVersion, Conflict: s.Conflict, Reverted: s.Reverted,
		Current: rowPtr(s.Current, s.Exists || s.Current.Deleted), Target: rowPtr(s.Target, s.TargetExists || s.Target.Deleted)}
	if s.Undone != nil {
		ps.Undone = rowPtr(*s.Undone, true)
	}
	if ci, ok := r.p.Carrier(s); ok {
		ps.Command = r.p.Commands[ci].ID
		if r.res != nil {
			ps.Outcome = (*cli.OutcomeJSON)(&r.res[ci].Outcome)
		}
	}
	return ps
}

func (r planResult) Text(w io.Writer) {
	if !r.head(w) {
		return
	}
	for _, s := range r.p.Steps {
		r.stepText(w, s)
	}
	fmt.Fprintln(w)
	if r.res == nil {
		fmt.Fprintln(w, r.dryRunText())
		return
	}
	tw := cli.NewTab(w)
	fmt.Fprintln(tw, "COMMAND\tSEQ\tSTATUS")
	for _, a := range r.res {
		status := statusText(a.Outcome)
		if a.Duplicate {
			status += " (published before; deduplicated)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", a.ID, a.Seq, status)
	}
	tw.Flush()
}

// head prints the plan's first line; false when there is nothing more to
// say (an undo of a command that was not applied).
func (r planResult) head(w io.Writer) bool {
	p := r.p
	fmt.Fprint(w, p.Preview().Summary)
	if p.Kind == repair.KindUndo && p.Status != wire.StatusApplied {
		fmt.Fprintf(w, ": the command was %s", p.Status)
		if p.Reason != "" {
			fmt.Fprintf(w, " (%s)", p.Reason)
		}
		fmt.Fprintln(w, "; nothing to undo")
		return false
	}
	fmt.Fprintf(w, ": %s, %s, %s\n", cli.Plural(len(p.Steps), "row"), cli.Plural(r.Conflicts, "conflict"), cli.Plural(r.Commands, "command"))
	return true
}

// stepText prints one step: its title, for a conflict the versions in
// play, and the properties its command changes.
func (r planResult) stepText(w io.Writer, s repair.Step) {
	fmt.Fprintln(w)
	fmt.Fprint(w, stepTitle(s))
	if ci, ok := r.p.Carrier(s); ok {
		fmt.Fprintf(w, "  [%s]", r.p.Commands[ci].ID)
	}
	fmt.Fprintln(w)
	if s.Conflict {
		fmt.Fprintf(w, "    now:      %s\n", versionText(s.Current, s.Exists))
		if s.Undone != nil {
			fmt.Fprintf(w, "    %s wrote: %s\n", r.p.Of, versionText(*s.Undone, !s.Undone.Deleted))
		}
		fmt.Fprintf(w, "    back to:  %s\n", versionText(s.Target, s.TargetExists))
	}
	if s.Op == "" {
		return
	}
	var now, target edm.Entity
	if s.Exists {
		now = s.Current.Props
	}
	if s.TargetExists {
		target = s.Target.Props
	}
	for _, c := range history.Diff(now, target) {
		switch {
		case !c.HadBefore:
			fmt.Fprintf(w, "    + %s = %s\n", c.Name, entityfmt.Value(c.After))
		case !c.HasNow:
			fmt.Fprintf(w, "    - %s = %s\n", c.Name, entityfmt.Value(c.Before))
		default:
			fmt.Fprintf(w, "    ~ %s: %s → %s\n", c.Name, entityfmt.Value(c.Before), entityfmt.Value(c.After))
		}
	}
}

// dryRunText is the last line of a plan that was not applied.
func (r planResult) dryRunText() string {
	p := r.p
	switch {
	case p.Blocked():
		return fmt.Sprintf("refused: %s changed by later commands; --force puts them back too. Nothing published.", cli.Plural(r.Conflicts, "row"))
	case r.Commands == 0 && reverted(p):
		return fmt.Sprintf("already undone by %s: nothing to do", p.Steps[0].Current.Cmd)
	case r.Commands == 0:
		return "nothing to do"
	}
	return fmt.Sprintf("dry run: nothing published; --apply publishes %s", cli.Plural(r.Commands, "command"))
}

// reverted reports whether a plan's rows were all put back by the plan's
// own commands: an undo applied before.
func reverted(p *repair.Plan) bool {
	for _, s := range p.Steps {
		if !s.Reverted {
			return false
		}
	}
	return len(p.Steps) > 0
}

// stepTitle is one line naming a step: row, operation and guard.
func stepTitle(s repair.Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q/%q: ", s.PK, s.RK)
	switch {
	case s.Conflict:
		fmt.Fprintf(&b, "CONFLICT, changed later by %s (now version %d)", s.Current.Cmd, s.Current.Version)
		if s.Op != "" {
			fmt.Fprintf(&b, "; %s", opText(s))
		} else {
			b.WriteString("; already at the target")
		}
	case s.Reverted:
		fmt.Fprintf(&b, "already undone by %s (now version %d); nothing to do", s.Current.Cmd, s.Current.Version)
	case s.Op == "":
		b.WriteString("already at the target; nothing to do")
	default:
		b.WriteString(opText(s))
	}
	return b.String()
}

func opText(s repair.Step) string {
	t := string(s.Op)
	if s.IfVersion != nil {
		t += fmt.Sprintf(" ifVersion %d", *s.IfVersion)
	}
	switch {
	case s.TargetExists:
		t += fmt.Sprintf(" → values of version %d (%s at seq %d)", s.Target.Version, s.Target.Cmd, s.Target.Seq)
	case s.Target.Deleted:
		t += fmt.Sprintf(" → deleted, as at version %d", s.Target.Version)
	default:
		t += " → absent"
	}
	return t
}

func versionText(r rows.Row, exists bool) string {
	switch {
	case exists:
		return fmt.Sprintf("version %d by %s: %s", r.Version, r.Cmd, entityfmt.Props(r.Props))
	case r.Deleted:
		return fmt.Sprintf("deleted (version %d by %s)", r.Version, r.Cmd)
	}
	return "absent"
}
