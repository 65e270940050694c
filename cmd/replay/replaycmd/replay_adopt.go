package replaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/adopt"
	"github.com/tablejournal/tablejournal/wire"
)

// adoptCmd is replay adopt (docs/adopting.md).
type adoptCmd struct {
	replayBase
	cfg    adopt.Config
	layout string
	apply  bool
	noWait bool
	wait   time.Duration
}

func (c *adoptCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Table, "table", "", "the table a service writes directly, to adopt (required)")
	fs.StringVar(&c.cfg.Into, "into", "", "the adopted table the projector writes, new or adopted from --table before (required unless --in-place; --table is never written)")
	fs.BoolVar(&c.apply, "apply", false, "journal the pass and wait until the projector applied it (default: dry run)")
	fs.BoolVar(&c.cfg.InPlace, "in-place", false, "adopt --table into itself, one partition at a time: each row's layout rows are projected beside it, then the row as the service wrote it is deleted if unchanged (instead of --into)")
	fs.BoolVar(&c.cfg.Resume, "resume", false, "finish a first pass that stopped: allow an --into that holds rows adopted already")
	fs.BoolVar(&c.cfg.CatchUp, "catch-up", false, "a later pass: journal what changed in --table since the last (upserts and deletes)")
	fs.StringVar(&c.layout, "layout", "", "the adopted table's row layout, set before its first command: plain keeps the current rows at the service's own keys, for its readers unchanged, and the history in <table>History (default: the one the table has, versioned for a new one)")
	fs.BoolVar(&c.cfg.SkipInvalid, "skip-invalid", false, "journal the other rows when some cannot be (each skipped row is listed)")
	fs.BoolVar(&c.noWait, "no-wait", false, "with --apply, return once the journal stored the commands, without waiting for the projector")
	fs.DurationVar(&c.wait, "timeout", time.Hour, "how long the pass may take, waiting for the projector included; running it again continues")
	c.workersFlag(fs, "partitions read at once (default 8)")
}

func (c *adoptCmd) check() error {
	if err := c.need("table"); err != nil {
		return err
	}
	switch {
	case c.cfg.InPlace && c.set["into"]:
		return errors.New("--in-place adopts --table into itself: drop --into")
	case !c.cfg.InPlace && !c.set["into"]:
		return errors.New("replay adopt needs --into NEW, or --in-place")
	case c.noWait && !c.apply:
		return errors.New("--no-wait goes with --apply")
	case c.noWait && c.cfg.InPlace:
		return errors.New("--no-wait cannot go with --in-place: a row is deleted only once its layout rows are applied")
	}
	if c.wait <= 0 {
		return errors.New("--timeout must be positive")
	}
	if c.layout != "" {
		l, err := wire.ParseLayout(c.layout)
		if err != nil {
			return fmt.Errorf("--layout: %w", err)
		}
		c.cfg.Layout = l
	}
	return nil
}

func (c *adoptCmd) nats() natsNeed { return natsYes }

func (c *adoptCmd) run(ctx context.Context, stdio cli.IO) error {
	ctx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	var end func()
	c.cfg.Progress, end = c.progress(stdio, "reading "+c.cfg.Table, "partition")
	p, err := adopt.New(c.rp).Plan(ctx, c.cfg)
	end()
	if errors.Is(err, replay.ErrNotEmpty) {
		return replayRefusal{err}
	}
	if err != nil {
		return err
	}
	v := adoptView{Plan: p, DryRun: !c.apply, Fingerprint: p.Fingerprint()}
	if !c.apply || p.Blocked() {
		cli.Render(stdio.Stdout, c.asJSON, v)
		if p.Blocked() {
			return replayRefusal{fmt.Errorf("adopt %s: %w: %s; --skip-invalid journals the others", p.Table, adopt.ErrProblems, cli.Plural(len(p.Problems), "row"))}
		}
		return nil
	}
	opts := adopt.ApplyOptions{NoWait: c.noWait}
	opts.Progress, end = c.progress(stdio, "journaling", "cmd")
	start := time.Now()
	res, err := p.ApplyWith(ctx, opts)
	end()
	v.Result, v.Elapsed = res, time.Since(start)+p.Read
	if res != nil {
		cli.Render(stdio.Stdout, c.asJSON, v)
	}
	return err
}

// adoptView is the dry run or the result of replay adopt.
type adoptView struct {
	*adopt.Plan
	DryRun      bool          `json:"dryRun"`
	Fingerprint string        `json:"fingerprint"`
	Elapsed     time.Duration `json:"elapsedNs,omitempty"`
}

func (v adoptView) Text(w io.Writer) {
	p := v.Plan
	what := "dry run"
	if !v.DryRun {
		what = "applied"
	}
	into := "into " + p.Into
	if p.InPlace {
		into = "in place"
	}
	if p.Layout == wire.LayoutPlain {
		into += " (plain layout)"
	}
	fmt.Fprintf(w, "adopt %s %s, %s pass, %s:\n", p.Table, into, p.Pass, what)
	fmt.Fprintf(w, "  read: %s in %s, %d bytes, in %s\n", cli.Plural(p.Rows, "row"), cli.Plural(p.Partitions, "partition"), p.Bytes, p.Read.Round(time.Millisecond))
	fmt.Fprintf(w, "  delta: %d upserts, %d deletes (%d rows unchanged)\n", p.Upserts, p.Deletes, p.Unchanged)
	switch {
	case p.InPlace && p.Layout == wire.LayoutPlain:
		fmt.Fprintf(w, "  in place: %d rows to stamp and journal at their own keys\n", p.Moves)
	case p.InPlace:
		fmt.Fprintf(w, "  in place: %d rows to move into the layout\n", p.Moves)
	}
	if p.SetLayout {
		fmt.Fprintf(w, "  layout: %s, set before the first command\n", p.Layout)
	}
	if len(p.Problems) > 0 {
		verb := "blocking (--skip-invalid journals the others)"
		if p.SkipInvalid {
			verb = "skipped"
		}
		fmt.Fprintf(w, "  %s %s:\n", cli.Plural(len(p.Problems), "row"), verb)
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "    %s\n", pr)
		}
	}
	fmt.Fprintf(w, "  fingerprint: %s\n", v.Fingerprint)
	if r := p.Result; r != nil {
		fmt.Fprintf(w, "  journaled: %d commands (%d held already) through seq %d in %s", r.Published, r.Duplicates, r.LastSeq, r.Publish.Round(time.Millisecond))
		if r.Wait > 0 {
			fmt.Fprintf(w, "; applied by the projector %s later", r.Wait.Round(time.Millisecond))
		}
		fmt.Fprintln(w)
		if ip := r.InPlace; ip != nil && p.Layout == wire.LayoutPlain {
			fmt.Fprintf(w, "  adopted in place: %d rows, now the projector's; %d changed by the service meanwhile and %d deleted by it, left for the next pass\n", ip.Moved, ip.Changed, ip.Deleted)
		} else if ip != nil {
			fmt.Fprintf(w, "  moved: %d rows; %d changed by the service meanwhile, left for the next pass; %d deleted by it meanwhile, deleted from the layout\n", ip.Moved, ip.Changed, ip.Deleted)
		}
		fmt.Fprintf(w, "  pass took %s\n", v.Elapsed.Round(time.Millisecond))
	}
}
