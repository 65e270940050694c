package repair

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// PlanKind says what a Plan is for.
type PlanKind string

// The two kinds of plans.
const (
	KindUndo    PlanKind = "undo"
	KindRestore PlanKind = "restore"
)

// Meta keys set on the commands a plan publishes.
const (
	MetaUndoOf    = "undoOf"    // the ID of the undone command
	MetaRestoreTo = "restoreTo" // the journal sequence restored to
)

// Step is what a plan does to one row: the row now, the version it goes
// back to, and the operation that gets it there.
type Step struct {
	Table, PK, RK string
	// Op brings the row from Current to Target; "" when they are equal.
	Op events.OpKind
	// IfVersion guards Op on the row's current version (nil for an insert:
	// insert already means "must not exist").
	IfVersion *int64
	// Current is the row now; Exists says whether it exists. A row that
	// does not exist has its tombstone here, or the zero Row if it never
	// existed.
	Current rows.Row
	Exists  bool
	// Target is the version the row goes back to; TargetExists is false
	// when the row must not exist (Target then holds the tombstone, or is
	// zero).
	Target       rows.Row
	TargetExists bool
	// Undone is, for undo, the version the undone command produced on this
	// row.
	Undone *rows.Row
	// Conflict marks, for undo, a row that commands after the undone one
	// changed again (Current.Cmd changed it last). It is left out of the
	// published commands unless the plan is forced.
	Conflict bool
	// Reverted marks, for undo, a row that this undo's own command already
	// put back (Current.Cmd): the undo was applied before, and the row is
	// done rather than a conflict.
	Reverted bool
}

// setOp chooses the operation that brings the row from Current to Target.
func (s *Step) setOp() {
	s.Op, s.IfVersion = "", nil
	switch {
	case s.Exists && s.TargetExists:
		if !s.Current.Props.Equal(s.Target.Props) {
			v := s.Current.Version
			s.Op, s.IfVersion = events.OpReplace, &v
		}
	case s.Exists:
		v := s.Current.Version
		s.Op, s.IfVersion = events.OpDelete, &v
	case s.TargetExists:
		s.Op = events.OpInsert
	}
}

// Plan is a set of commands that undo one command or restore a table to a
// point: a replay.Plan (preview.go). It is computed against the table as it
// is now; Apply plans again and refuses a plan the rows changed under
// (replay.ErrStale), and every operation is guarded by the row's current
// version, so rows changed between that check and the commands' turn are
// rejected rather than overwritten.
type Plan struct {
	Kind PlanKind
	// Of is, for undo, the undone command's ID.
	Of string
	// Table and PK are the scope: for undo the command's partition, for
	// restore the table and partition, or the whole table when
	// AllPartitions is set.
	Table, PK     string
	AllPartitions bool
	// Seq is, for undo, the undone command's journal sequence; for restore,
	// the sequence restored to.
	Seq uint64
	// Status and Reason are, for undo, the undone command's outcome: only
	// an applied command has anything to undo.
	Status wire.Status
	Reason string
	// Force includes conflicting rows in Commands.
	Force bool
	// Steps lists the rows, conflicts included. Rows already at their
	// target are left out of restore plans and kept (Op "") in undo plans.
	Steps []Step
	// Commands are what Apply publishes, IDs deterministic, so the same
	// commands published twice are deduplicated by the journal.
	Commands []*events.Command

	planner *Planner // that made it, to plan again
}

// Conflicts returns the conflicting steps.
func (p *Plan) Conflicts() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Conflict {
			out = append(out, s)
		}
	}
	return out
}

// Blocked reports whether Apply refuses the plan: it has conflicts and is
// not forced.
func (p *Plan) Blocked() bool { return !p.Force && len(p.Conflicts()) > 0 }

// opCost estimates what one step weighs in the projector's transaction: the
// version rows and tip it writes, at their wire size.
func opCost(s Step) (ops, bytes int) {
	size := func(props edm.Entity) int {
		return (edm.EntitySize(s.PK, s.RK, props)+events.SystemColumnsReserve)*4/3 + 512
	}
	switch s.Op {
	case events.OpInsert:
		return 1, size(s.Target.Props)
	case events.OpDelete:
		return 3, 2*size(s.Current.Props) + 512
	default:
		return 2, size(s.Current.Props) + size(s.Target.Props)
	}
}

// build turns the steps into commands: one partition each, in step order,
// at most events.MaxOpsPerCommand operations and a transaction's bytes.
func (p *Plan) build(issuer, idPrefix string, meta map[string]string) {
	p.Commands = nil
	var (
		cur        *events.Command
		ops, bytes int
	)
	for _, s := range p.Steps {
		if s.Op == "" || (s.Conflict && !p.Force) {
			continue
		}
		n, b := opCost(s)
		if cur == nil || cur.Table != s.Table || cur.PK != s.PK ||
			len(cur.Ops) >= events.MaxOpsPerCommand || ops+n > store.MaxOps || bytes+b > replay.TxBudget {
			cur = &events.Command{
				ID:     fmt.Sprintf("%s-%d", idPrefix, len(p.Commands)),
				Table:  s.Table,
				PK:     s.PK,
				Issuer: issuer,
				Meta:   meta,
			}
			p.Commands = append(p.Commands, cur)
			ops, bytes = 0, 0
		}
		op := events.RowOp{Op: s.Op, RK: s.RK, IfVersion: s.IfVersion}
		if s.Op != events.OpDelete {
			op.Entity = s.Target.Props.Clone()
		}
		cur.Ops = append(cur.Ops, op)
		ops, bytes = ops+n, bytes+b
	}
}

// idPrefix returns kind-base, or kind-<hash of base> when that would make
// command IDs longer than events.MaxIDLen. Either is valid per SPEC §2:
// base only holds ID characters.
func idPrefix(kind PlanKind, base string) string {
	p := string(kind) + "-" + base
	if len(p)+8 <= events.MaxIDLen {
		return p
	}
	sum := sha256.Sum256([]byte(base))
	return string(kind) + "-" + hex.EncodeToString(sum[:20])
}

// publish publishes the plan's commands through the journal Writer as
// ordinary commands and waits for their outcomes. It refuses a blocked
// plan with ErrConflicts and publishes nothing. If a command is rejected
// (a guard failed: the rows changed since the plan was made), the error
// wraps replay.ErrRejected; the results say which.
func (r *Planner) publish(ctx context.Context, p *Plan) ([]replay.Published, error) {
	if err := r.NeedJournal("apply " + string(p.Kind)); err != nil {
		return nil, err
	}
	if p.Blocked() {
		return nil, fmt.Errorf("%s %s: %w: %d rows; plan again with Force to include them",
			p.Kind, p.describe(), ErrConflicts, len(p.Conflicts()))
	}
	if len(p.Commands) == 0 {
		return nil, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, replay.DefaultAwait)
		defer cancel()
	}
	// Outcomes stored from here on are read in one pass.
	oc := outcomes.NewReader(r.JetStream())
	from, err := oc.Last(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (is the projector running?)", err)
	}
	w := journal.NewWriter(r.JetStream(), r.Journal().Name())
	res := make([]replay.Published, len(p.Commands))
	futures := make([]*journal.Future, len(p.Commands))
	for i, c := range p.Commands {
		f, err := w.PublishAsync(ctx, c)
		if err != nil {
			return nil, err
		}
		futures[i] = f
	}
	pubs := make([]journal.PublishResult, len(p.Commands))
	for i, f := range futures {
		pr, err := f.Result(ctx)
		if err != nil {
			return nil, err
		}
		res[i] = replay.Published{ID: p.Commands[i].ID, Seq: pr.Seq, Duplicate: pr.Duplicate}
		pubs[i] = pr
	}
	// Each command's outcome is the one of its own journal sequence.
	outs, err := oc.AwaitAll(ctx, from+1, pubs)
	for i := range res {
		res[i].Outcome = outs[i]
	}
	if err != nil {
		return res, fmt.Errorf("%w (is the projector running?)", err)
	}
	rejected := 0
	for _, a := range res {
		if a.Outcome.Status == wire.StatusRejected {
			rejected++
		}
	}
	if rejected > 0 {
		return res, fmt.Errorf("%s %s: %w: %d of %d commands (the rows changed since the plan was made)",
			p.Kind, p.describe(), replay.ErrRejected, rejected, len(res))
	}
	return res, nil
}

func (p *Plan) describe() string {
	switch p.Kind {
	case KindUndo:
		return p.Of
	case KindRestore:
		return fmt.Sprintf("%s/%s to seq %d", p.Table, store.Partition{PK: p.PK, All: p.AllPartitions}, p.Seq)
	}
	return ""
}

// currentRow reads a row as it is now: its tip, else its newest version row
// (its tombstone), else nothing.
func (r *Planner) currentRow(ctx context.Context, table, pk, rk string) (rows.Row, bool, error) {
	return history.New(r.Source).AsOfRow(ctx, table, pk, rk, uint64(1<<63-1))
}
