package adopt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// move is a row as the service wrote it that an in-place pass deletes
// once the command that adopted it (cmd) is applied.
type move struct {
	rk, etag, cmd string
	// stamped: in place on a plain table, an earlier pass stamped the
	// row already (plain.go).
	stamped bool
}

// InPlaceResult is what an in-place Apply did beside journaling.
type InPlaceResult struct {
	// Moved counts the rows deleted in their service form once their
	// layout rows were applied; on a plain table, the rows stamped and
	// journaled, now the projector's current rows.
	Moved int `json:"moved"`
	// Changed counts the rows the service changed meanwhile (ETag
	// mismatch): kept as they are, for the next pass.
	Changed int `json:"changed"`
	// Deleted counts the rows the service deleted meanwhile: their adopted
	// rows are deleted by a journaled command (on a plain table nothing
	// of them was journaled).
	Deleted int `json:"deleted"`
}

// applyInPlace journals the plan one partition at a time (Workers at
// once): a partition's commands, then a wait until the projector applied
// them, then the deletes of its rows in their service form, each on the
// ETag it was read at, up to 100 to a transaction.
func (p *Plan) applyInPlace(ctx context.Context, opts ApplyOptions) (*Result, error) {
	res := &Result{InPlace: &InPlaceResult{}}
	start := time.Now()
	w := journal.NewWriter(p.a.JetStream(), p.a.Journal().Name(), journal.WithLimits(p.a.Store().Limits()))
	var mu sync.Mutex
	var done int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, p.workers))
	for _, pp := range p.parts {
		if len(pp.cmds) == 0 && len(pp.moves) == 0 {
			continue
		}
		g.Go(func() error {
			move := p.movePartition
			if p.Layout == wire.LayoutPlain {
				move = p.stampPartition
			}
			r, err := move(gctx, w, pp)
			mu.Lock()
			defer mu.Unlock()
			res.Published += r.Published
			res.Duplicates += r.Duplicates
			res.LastSeq = max(res.LastSeq, r.LastSeq)
			res.InPlace.Moved += r.InPlace.Moved
			res.InPlace.Changed += r.InPlace.Changed
			res.InPlace.Deleted += r.InPlace.Deleted
			done += int64(len(pp.cmds))
			if opts.Progress != nil {
				opts.Progress(done, int64(len(p.Commands)))
			}
			return err
		})
	}
	err := g.Wait()
	res.Publish = time.Since(start)
	p.Result = res
	if err != nil {
		return res, fmt.Errorf("adopt %s in place: %w; run the pass again with --resume: what was journaled is not journaled twice", p.Table, err)
	}
	return res, nil
}

// movePartition adopts one partition in place.
func (p *Plan) movePartition(ctx context.Context, w *journal.Writer, pp partPlan) (*Result, error) {
	res := &Result{InPlace: &InPlaceResult{}}
	if err := publishAll(ctx, w, pp.cmds, res); err != nil {
		return res, err
	}
	if err := p.a.WaitApplied(ctx, res.LastSeq); err != nil {
		return res, err
	}
	st := p.a.Store()
	var gone []move
	for batch := range chunks(pp.moves, store.MaxOps) {
		ops := make([]store.Op, len(batch))
		for i, m := range batch {
			ops[i] = store.Op{Kind: store.Delete, RK: m.rk, IfMatch: m.etag}
		}
		if _, err := st.Transact(ctx, p.Table, pp.pk, ops); err == nil {
			res.InPlace.Moved += len(batch)
			continue
		} else if !errors.Is(err, store.ErrPrecondition) && !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
		// A row changed or deleted meanwhile fails the whole transaction:
		// one by one, then.
		for _, m := range batch {
			_, err := st.Transact(ctx, p.Table, pp.pk, []store.Op{{Kind: store.Delete, RK: m.rk, IfMatch: m.etag}})
			switch {
			case err == nil:
				res.InPlace.Moved++
			case errors.Is(err, store.ErrPrecondition):
				res.InPlace.Changed++
			case errors.Is(err, store.ErrNotFound):
				gone = append(gone, m)
			default:
				return res, err
			}
		}
	}
	// The service deleted these after the pass read them: so is the
	// adopted row.
	var dels []*events.Command
	for _, m := range gone {
		dels = append(dels, &events.Command{
			ID: DeleteID(p.Table, p.Into, pp.pk, m.rk, m.cmd), Table: p.Into, PK: pp.pk, Issuer: p.issuer,
			Ops:  []events.RowOp{{Op: events.OpDelete, RK: m.rk}},
			Meta: map[string]string{MetaSource: p.Table},
		})
	}
	res.InPlace.Deleted = len(dels)
	return res, publishAll(ctx, w, dels, res)
}

// publishAll publishes cmds, pipelined, and adds their acknowledgements
// to res.
func publishAll(ctx context.Context, w *journal.Writer, cmds []*events.Command, res *Result) error {
	fs := make([]*journal.Future, 0, len(cmds))
	for _, c := range cmds {
		f, err := w.PublishAsync(ctx, c)
		if err != nil {
			return fmt.Errorf("publish %s: %w", c.ID, err)
		}
		fs = append(fs, f)
	}
	for _, f := range fs {
		r, err := f.Result(ctx)
		if err != nil {
			return fmt.Errorf("publish %s: %w", f.ID(), err)
		}
		if r.Duplicate {
			res.Duplicates++
		} else {
			res.Published++
		}
		res.LastSeq = max(res.LastSeq, r.Seq)
	}
	return nil
}

// chunks yields s in slices of at most n.
func chunks[T any](s []T, n int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}
