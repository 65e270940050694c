package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablejournal/tablejournal/journal"
)

// UndoOptions configure PlanUndo.
type UndoOptions struct {
	// Force includes the rows that later commands changed again: they are
	// put back to the version before the undone command all the same, over
	// the later changes.
	Force bool
}

// PlanUndo plans the undo of command id: for each row it touched, the
// operation that puts the row back to the version before the command
// (an insert becomes a delete, an update a replace with the previous
// values, a delete an insert of the tombstone's values), guarded by the
// row's current version. A row whose latest version is no longer the
// command's is a conflict. A command that was not applied (rejected, or a
// duplicate) has nothing to undo: its plan has no steps.
//
// The plan's commands are one partition each (normally one command, as
// atomic as the undone one), IDs "undo-<id>-<n>", meta undoOf = id. An undo
// is itself an ordinary command: PlanUndo of an undo's ID reverts it.
func (r *Replayer) PlanUndo(ctx context.Context, id string, opts UndoOptions) (*Plan, error) {
	o, err := r.outcome(ctx, id)
	if err != nil {
		return nil, err
	}
	p := &Plan{Kind: KindUndo, Of: id, Table: o.Table, PK: o.PK, Seq: o.Seq,
		Status: o.Status, Reason: o.Reason, Force: opts.Force}
	if o.Status != journal.StatusApplied {
		return p, nil
	}
	// The versions the command produced, per row, in op order. A row named
	// twice by one command got two versions: undo goes back before the first.
	type span struct{ first, last int64 }
	var order []string
	spans := make(map[string]*span)
	for _, rv := range o.Rows {
		sp, ok := spans[rv.RK]
		if !ok {
			spans[rv.RK] = &span{rv.Version, rv.Version}
			order = append(order, rv.RK)
			continue
		}
		sp.first, sp.last = min(sp.first, rv.Version), max(sp.last, rv.Version)
	}
	prefix := idPrefix(KindUndo, id)
	for _, rk := range order {
		sp := spans[rk]
		s := Step{Table: o.Table, PK: o.PK, RK: rk}
		if s.Current, s.Exists, err = currentRow(ctx, r.st, o.Table, o.PK, rk); err != nil {
			return nil, fmt.Errorf("undo %s: %w", id, err)
		}
		undone, err := readVersion(ctx, r.st, o.Table, o.PK, rk, sp.last)
		if err != nil {
			return nil, fmt.Errorf("undo %s: %w", id, err)
		}
		s.Undone = &undone
		if sp.first > 0 {
			if s.Target, err = readVersion(ctx, r.st, o.Table, o.PK, rk, sp.first-1); err != nil {
				return nil, fmt.Errorf("undo %s: %w", id, err)
			}
			s.TargetExists = !s.Target.Deleted
			s.Target.Tip, s.Target.ETag = s.TargetExists, ""
		}
		s.Conflict = s.Current.Version != sp.last
		if s.Conflict && planCommand(prefix, s.Current.Cmd) {
			s.Conflict, s.Reverted = false, true
		}
		s.setOp()
		p.Steps = append(p.Steps, s)
	}
	p.build(r.cfg.Issuer, prefix, map[string]string{MetaUndoOf: id})
	return p, nil
}

// planCommand reports whether id is one of the commands of the plan whose
// IDs are "<prefix>-<n>".
func planCommand(prefix, id string) bool {
	n, ok := strings.CutPrefix(id, prefix+"-")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
