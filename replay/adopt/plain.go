package adopt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// Adopting a table in place into the plain layout (SPEC §4, "The plain
// layout"): its rows already stand at the keys the projector keeps current
// rows at, so nothing moves. The history goes to the history table, and
// each row, as the service wrote it, becomes the projector's current row:
// a row without the projector's system columns is foreign to it (the
// projector holds its partition rather than overwrite it), so the pass
// first stamps the row, merging _seq 0 and _cmd (its adoption command's
// ID) into it on the condition of the ETag it read. A stamped row is the
// projector's, at a sequence before any command: the mirror write after
// the adoption command's history commit replaces it with the same values
// and the real system columns, on the stamped row's ETag. A reader of the
// table reads the row at every moment, with the service's values; only
// the system columns come and change.

// planStamped plans, in place on a plain table, a row that already holds
// the projector's system columns: the current row of an adopted or
// journaled version (nothing to do), or one an earlier pass stamped and
// whose command did not apply (the same command again, by its ID). It
// reports whether the row is planned; a row without them is the
// service's, to adopt as any source row.
func planStamped(pp *partPlan, cfg Config, e store.Entity, tip rows.Row, had bool) bool {
	cmd, ok := e.Props[rows.ColCmd]
	if !ok {
		return false
	}
	seq := e.Props[rows.ColSeq]
	switch {
	case had && tip.Cmd == cmd.Str:
		if IsAdoptionID(cmd.Str) {
			pp.unchanged++
		}
	case seq.Int == 0 && IsAdoptionID(cmd.Str):
		ent := make(edm.Entity, len(e.Props))
		for k, v := range e.Props {
			if !strings.HasPrefix(k, "_") {
				ent[k] = v
			}
		}
		pp.cmds = append(pp.cmds, &events.Command{
			ID: cmd.Str, Table: cfg.Into, PK: e.PK, Issuer: cfg.Issuer,
			Ops:  []events.RowOp{{Op: events.OpUpsert, RK: e.RK, Entity: ent}},
			Meta: map[string]string{MetaSource: cfg.Table},
		})
		pp.moves = append(pp.moves, move{rk: e.RK, etag: e.ETag, cmd: cmd.Str, stamped: true})
	}
	// Else the current row of a command the journal applied since, not
	// adoption's, or one the projector is yet to bring forward: the
	// journal's.
	return true
}

// stampPartition adopts one partition of a plain table in place: it
// stamps the rows (each on its ETag, up to 100 to a transaction), journals
// the commands of those stamped, and waits until the projector applied
// them (history, then the table's row). A row the service changed or
// deleted since it was read is not journaled: the next pass reads it
// again.
func (p *Plan) stampPartition(ctx context.Context, w *journal.Writer, pp partPlan) (*Result, error) {
	res := &Result{InPlace: &InPlaceResult{}}
	byRK := make(map[string]*events.Command, len(pp.cmds))
	for _, c := range pp.cmds {
		byRK[c.Ops[0].RK] = c
	}
	var todo []move
	var cmds []*events.Command
	for _, m := range pp.moves {
		if m.stamped {
			cmds = append(cmds, byRK[m.rk])
		} else {
			todo = append(todo, m)
		}
	}
	st := p.a.Store()
	stamp := func(m move) store.Op {
		return store.Op{Kind: store.Merge, RK: m.rk, IfMatch: m.etag,
			Props: edm.Entity{rows.ColSeq: edm.Int64(0), rows.ColCmd: edm.String(m.cmd)}}
	}
	for batch := range chunks(todo, store.MaxOps) {
		ops := make([]store.Op, len(batch))
		for i, m := range batch {
			ops[i] = stamp(m)
		}
		if _, err := st.Transact(ctx, p.Table, pp.pk, ops); err == nil {
			for _, m := range batch {
				cmds = append(cmds, byRK[m.rk])
			}
			continue
		} else if !errors.Is(err, store.ErrPrecondition) && !errors.Is(err, store.ErrNotFound) {
			return res, fmt.Errorf("stamp the rows of %s/%q: %w", p.Table, pp.pk, err)
		}
		for _, m := range batch {
			_, err := st.Transact(ctx, p.Table, pp.pk, []store.Op{stamp(m)})
			switch {
			case err == nil:
				cmds = append(cmds, byRK[m.rk])
			case errors.Is(err, store.ErrPrecondition):
				res.InPlace.Changed++
			case errors.Is(err, store.ErrNotFound):
				res.InPlace.Deleted++
			default:
				return res, fmt.Errorf("stamp %s/%q/%q: %w", p.Table, pp.pk, m.rk, err)
			}
		}
	}
	if err := publishAll(ctx, w, cmds, res); err != nil {
		return res, err
	}
	if res.LastSeq > 0 {
		if err := p.a.WaitApplied(ctx, res.LastSeq); err != nil {
			return res, err
		}
	}
	res.InPlace.Moved = len(cmds)
	return res, nil
}
