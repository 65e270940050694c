package repair

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
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
func (r *Planner) PlanUndo(ctx context.Context, id string, opts UndoOptions) (*Plan, error) {
	o, err := r.Outcome(ctx, id)
	if err != nil {
		return nil, err
	}
	p := &Plan{Kind: KindUndo, Of: id, Table: o.Table, PK: o.PK, Seq: o.Seq,
		Status: o.Status, Reason: o.Reason, Force: opts.Force, planner: r}
	if o.Status != wire.StatusApplied {
		return p, nil
	}
	if err := r.refuseUndoErase(ctx, o); err != nil {
		return nil, err
	}
	vt, err := r.VersionTable(ctx, o.Table) // a plain table's history (SPEC §4)
	if err != nil {
		return nil, fmt.Errorf("undo %s: %w", id, err)
	}
	if err := replay.CheckPruned(ctx, r.Store(), vt, o.PK, o.Seq-1); err != nil {
		return nil, fmt.Errorf("undo %s: %w", id, replay.Logical(err, o.Table)) // pruned (prune.go)
	}
	// The version the command produced on each row it changed (one per
	// row, keyed by its sequence), and the row's state just before it.
	prefix := idPrefix(KindUndo, id)
	seen := make(map[string]bool)
	for _, rv := range o.Rows {
		if seen[rv.RK] {
			continue // an outcome published before a command made one version per row
		}
		seen[rv.RK] = true
		s := Step{Table: o.Table, PK: o.PK, RK: rv.RK}
		if s.Current, s.Exists, err = r.currentRow(ctx, o.Table, o.PK, rv.RK); err != nil {
			return nil, fmt.Errorf("undo %s: %w", id, err)
		}
		undone, ok, err := rows.VersionBySeq(ctx, r.Store(), vt, o.PK, rv.RK, o.Seq)
		if err == nil && !ok {
			err = fmt.Errorf("the version of %q it wrote at %d: %w", rv.RK, o.Seq, store.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("undo %s: %w", id, err)
		}
		s.Undone = &undone
		if s.Target, s.TargetExists, err = history.New(r.Source).AsOfRow(ctx, o.Table, o.PK, rv.RK, o.Seq-1); err != nil {
			return nil, fmt.Errorf("undo %s: %w", id, err)
		}
		s.Conflict = s.Current.Version != undone.Version
		if s.Conflict && planCommand(prefix, s.Current.Cmd) {
			s.Conflict, s.Reverted = false, true
		}
		s.setOp()
		p.Steps = append(p.Steps, s)
	}
	p.build(r.Config().Issuer, prefix, map[string]string{MetaUndoOf: id})
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
