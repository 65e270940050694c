package replaycmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/entityfmt"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

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
	res []repair.Applied
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
func newPlanResult(p *repair.Plan, res []repair.Applied) planResult {
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
		r.Published = append(r.Published, publishedJSON{Duplicate: a.Publish.Duplicate, ID: a.Command.ID, Outcome: cli.OutcomeJSON(a.Outcome), Seq: a.Publish.Seq})
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
	if ci, ok := r.carrier(s); ok {
		ps.Command = r.p.Commands[ci].ID
		if r.res != nil {
			ps.Outcome = (*cli.OutcomeJSON)(&r.res[ci].Outcome)
		}
	}
	return ps
}

// carrier is the index of the command that carries step s, if any.
func (r planResult) carrier(s repair.Step) (int, bool) {
	found, at := false, 0
	if s.Op == "" {
		return 0, false
	}
	for i, c := range r.p.Commands {
		for _, op := range c.Ops {
			if c.PK == s.PK && op.RK == s.RK {
				found, at = true, i // the last one, should two carry it
			}
		}
	}
	return at, found
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
		if a.Publish.Duplicate {
			status += " (published before; deduplicated)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", a.Command.ID, a.Publish.Seq, status)
	}
	tw.Flush()
}

// head prints the plan's first line; false when there is nothing more to
// say (an undo of a command that was not applied).
func (r planResult) head(w io.Writer) bool {
	p := r.p
	switch p.Kind {
	case repair.KindUndo:
		fmt.Fprintf(w, "undo of %s (seq %d, %s %q)", p.Of, p.Seq, p.Table, p.PK)
		if p.Status != wire.StatusApplied {
			fmt.Fprintf(w, ": the command was %s", p.Status)
			if p.Reason != "" {
				fmt.Fprintf(w, " (%s)", p.Reason)
			}
			fmt.Fprintln(w, "; nothing to undo")
			return false
		}
	case repair.KindRestore:
		scope := p.Table
		if !p.AllPartitions {
			scope += fmt.Sprintf(" %q", p.PK)
		}
		fmt.Fprintf(w, "restore of %s to seq %d", scope, p.Seq)
	}
	fmt.Fprintf(w, ": %s, %s, %s\n", cli.Plural(len(p.Steps), "row"), cli.Plural(r.Conflicts, "conflict"), cli.Plural(r.Commands, "command"))
	return true
}

// stepText prints one step: its title, for a conflict the versions in
// play, and the properties its command changes.
func (r planResult) stepText(w io.Writer, s repair.Step) {
	fmt.Fprintln(w)
	fmt.Fprint(w, stepTitle(s))
	if ci, ok := r.carrier(s); ok {
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
