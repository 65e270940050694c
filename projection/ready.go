package projection

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection/decide"
	"github.com/tablejournal/tablejournal/wire"
)

// The end of stage 2 (batch.go), in each partition's goroutine: its Ready
// hook waits for the batch's outcome look-up and settles each entry's
// Prior (and own outcome) from it, before the partition decides anything.

// ready waits for the batch's look-up and sets the Prior of each entry
// of part, and its own outcome when it has one: the Ready hook of the
// partition's Apply, in the partition's goroutine.
func (b *batch) ready(ctx context.Context, part partition) error {
	select {
	case <-b.looked:
	case <-ctx.Done():
		return ctx.Err()
	}
	if b.lookupErr != nil {
		return b.lookupErr
	}
	return b.p.settlePriors(ctx, b.priors, b.entries[part], b.priorOf)
}

// priors are the latest outcomes of a batch's IDs, and the histories of
// those read since (settlePriors), shared by the batch's partitions.
type priors struct {
	latest map[string]wire.Outcome

	mu        sync.Mutex
	histories map[string][]wire.Outcome
}

// settlePriors sets the Prior of each of es (and own outcome) from pr and
// from inflight, the outcomes of the shard's previous batch that may not
// be stored yet (batch.priorOf; nil outside the shard loop).
func (p *Projector) settlePriors(ctx context.Context, pr *priors, es []Entry, inflight func(id string) (decide.Prior, bool)) error {
	for i := range es {
		e := &es[i]
		if e.Cmd == nil && e.Erase == nil {
			continue
		}
		var f decide.Prior
		var ok bool
		if inflight != nil {
			f, ok = inflight(e.ID)
		}
		if err := p.settlePrior(ctx, e, pr, f, ok); err != nil {
			return err
		}
	}
	return nil
}

// settlePrior sets e's Prior (and own outcome) from the latest outcomes of
// the batch's IDs, reading the ID's history when its latest outcome is of
// a later message; pr keeps the histories read. f, when inflight, is the
// outcome the shard's previous batch applied e's ID with, which may not
// be stored yet: it is older than e and newer than anything stored before
// it.
func (p *Projector) settlePrior(ctx context.Context, e *Entry, pr *priors, f decide.Prior, inflight bool) error {
	var (
		o  wire.Outcome
		ok bool
	)
	if pr != nil {
		o, ok = pr.latest[e.ID]
	}
	switch {
	case inflight && f.Seq < e.Seq && (!ok || o.Seq <= f.Seq):
		e.Prior = f
		return nil
	case !ok:
		return nil
	case o.Seq < e.Seq:
		e.Prior = priorFromOutcome(o)
		return nil
	case o.Seq == e.Seq && o.Status != wire.StatusDuplicate:
		// Its own outcome (a redelivery): it applied or was rejected, so
		// no earlier message with its ID applied.
		e.Own = &o
		return nil
	}
	all, err := pr.history(ctx, p.outcomeReader(), e.ID)
	if err != nil {
		return err
	}
	if inflight && f.Seq < e.Seq && !slices.ContainsFunc(all, func(x wire.Outcome) bool { return x.Seq == f.Seq }) {
		all = append(slices.Clone(all), wire.Outcome{ID: e.ID, Seq: f.Seq, Status: f.Status, Digest: f.Digest})
	}
	e.Prior = decide.PriorFrom(all, e.Seq)
	for i := range all {
		if all[i].Seq == e.Seq {
			e.Own = &all[i]
		}
	}
	return nil
}

// history returns the outcomes of id, read once per batch.
func (pr *priors) history(ctx context.Context, r *outcomes.Reader, id string) ([]wire.Outcome, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if all, ok := pr.histories[id]; ok {
		return all, nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	all, err := r.History(ctx, id)
	if err != nil {
		return nil, err
	}
	pr.histories[id] = all
	return all, nil
}

// lookupTimeout bounds the outcomes look-up of one fetched batch.
const lookupTimeout = 30 * time.Second

// priorFromOutcome is o as the Prior it is to a later message.
func priorFromOutcome(o wire.Outcome) decide.Prior {
	return decide.Prior{Seq: o.Seq, Status: o.Status, Digest: o.Digest}
}
