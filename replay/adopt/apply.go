package adopt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/journal"
)

// Result is what Apply did.
type Result struct {
	// Published counts the commands the journal stored now; Duplicates
	// those it already held (a pass applied twice within the journal's
	// duplicate window).
	Published  int `json:"published"`
	Duplicates int `json:"duplicates"`
	// LastSeq is the highest journal sequence of the pass's commands.
	LastSeq uint64 `json:"lastSeq"`
	// Publish is how long publishing took; Wait how long the projector
	// then took to apply them (0 without waiting).
	Publish time.Duration `json:"publishNs"`
	Wait    time.Duration `json:"waitNs"`
	// InPlace is set by an in-place Apply.
	InPlace *InPlaceResult `json:"inPlace,omitempty"`
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// NoWait returns once the journal stored the commands, without waiting
	// for the projector to apply them.
	NoWait bool
	// Progress, if set, is called as commands are acknowledged.
	Progress func(done, total int64)
}

// Apply journals the plan and waits until the projector applied it.
//
// A Plan is not a replay.Plan: that Apply plans again and refuses a plan
// whose fingerprint changed, and a pass over a table its service keeps
// writing would almost never find the same plan twice (and would read the
// whole table again). A pass needs no such check: its command IDs name
// each row's version (UpsertID, DeleteID), so a pass applied late journals
// nothing twice, and what changed since is the next catch-up pass's.
func (p *Plan) Apply(ctx context.Context) error {
	_, err := p.ApplyWith(ctx, ApplyOptions{})
	return err
}

// ApplyWith journals the plan's commands, pipelined through one
// journal.Writer, and (unless opts.NoWait) waits until the projector
// applied them. A blocked plan is refused with ErrProblems, before
// anything is published. Applying a plan again, or a later pass after a
// crash, journals nothing twice: the command IDs are the rows' versions.
func (p *Plan) ApplyWith(ctx context.Context, opts ApplyOptions) (*Result, error) {
	if p.Blocked() {
		return nil, fmt.Errorf("adopt %s: %w: %d rows (first: %s); --skip-invalid journals the others", p.Table, ErrProblems, len(p.Problems), p.Problems[0])
	}
	if p.SetLayout {
		if _, err := tablelayout.Set(ctx, p.a.Journal(), p.Into, p.Layout); err != nil {
			return nil, fmt.Errorf("adopt %s: %w", p.Table, err)
		}
	}
	if p.InPlace {
		return p.applyInPlace(ctx, opts)
	}
	res := &Result{}
	start := time.Now()
	w := journal.NewWriter(p.a.JetStream(), p.a.Journal().Name(), journal.WithLimits(p.a.Store().Limits()))
	// One goroutine sends, another collects the acknowledgements as they
	// come, so that progress moves and the Writer's in-flight bound is the
	// only buffer.
	futures := make(chan *journal.Future, 256)
	collected := make(chan error, 1)
	total := int64(len(p.Commands))
	go func() {
		var cerr error
		var n, failed int64
		for f := range futures {
			r, err := f.Result(ctx)
			n++
			if err != nil {
				if failed++; cerr == nil {
					cerr = fmt.Errorf("adopt: publish %s: %w", f.ID(), err)
				}
				continue
			}
			if r.Duplicate {
				res.Duplicates++
			} else {
				res.Published++
			}
			res.LastSeq = max(res.LastSeq, r.Seq)
			if opts.Progress != nil {
				opts.Progress(n, total)
			}
		}
		if failed > 1 {
			cerr = fmt.Errorf("%w (and %d more commands unacknowledged)", cerr, failed-1)
		}
		collected <- cerr
	}()
	var perr error
	for _, c := range p.Commands {
		f, err := w.PublishAsync(ctx, c)
		if err != nil {
			perr = fmt.Errorf("adopt: publish %s: %w", c.ID, err)
			break
		}
		futures <- f
	}
	close(futures)
	perr = errors.Join(perr, <-collected)
	res.Publish = time.Since(start)
	p.Result = res
	if perr != nil {
		return res, fmt.Errorf("%w; run the same pass again with --resume (or --catch-up): what was journaled is not journaled twice", perr)
	}
	if opts.NoWait || res.LastSeq == 0 {
		return res, nil
	}
	wstart := time.Now()
	err := p.a.WaitApplied(ctx, res.LastSeq)
	res.Wait = time.Since(wstart)
	return res, err
}
