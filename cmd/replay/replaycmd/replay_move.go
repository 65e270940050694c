package replaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/journal/move"
)

// moveCmd is replay move: the journal's commands into a new stream
// (docs/replay.md "Moving a journal").
type moveCmd struct {
	replayBase
	cfg move.Config
}

func (c *moveCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.To, "new-stream", "", "the new journal stream's name (required)")
	fs.BoolVar(&c.cfg.AllowMsgDelete, "allow-msg-delete", false, "the new journal allows deleting single messages (erasure) and denies purges")
	fs.BoolVar(&c.cfg.AllowTrim, "allow-trim", false, "the new journal allows purges and deletes (compaction)")
	fs.BoolVar(&c.cfg.Apply, "apply", false, "copy the commands, wait for the copy and verify it; the journal keeps taking commands and the copy follows it (default: dry run)")
	fs.BoolVar(&c.cfg.Cutover, "cutover", false, "with --apply, make the copy the journal: the old stream stops taking commands, the copy catches up, is verified whole and takes the journal's subjects and consumers (stop the projectors first)")
	fs.BoolVar(&c.cfg.DeleteSource, "delete-old", false, "with --cutover, delete the old stream once the copy is the journal and verified (it still holds every command, erased keys' included)")
}

func (c *moveCmd) check() error {
	if err := c.need("new-stream"); err != nil {
		return err
	}
	c.cfg.From = c.replayBase.cfg.Journal
	if c.cfg.Cutover && !c.cfg.Apply {
		return errors.New("--cutover needs --apply")
	}
	if c.cfg.DeleteSource && !c.cfg.Cutover {
		return errors.New("--delete-old needs --cutover")
	}
	return c.cfg.Validate()
}

func (c *moveCmd) nats() natsNeed { return natsOnly }

func (c *moveCmd) run(ctx context.Context, stdio cli.IO) error {
	progress, done := c.progress(stdio, "copy", "seq")
	if progress != nil {
		c.cfg.Progress = func(copied, total uint64) { progress(int64(copied), int64(total)) }
	}
	r, err := move.Run(ctx, c.replayBase.cfg.JetStream, c.cfg)
	done()
	cli.Render(stdio.Stdout, c.asJSON, moveResult{Report: r, From: r.From, To: r.To, failed: err != nil})
	switch {
	case errors.Is(err, move.ErrProjectorRunning), errors.Is(err, move.ErrTargetExists):
		return cli.Refused("refused", err)
	}
	return err
}

// moveResult is what replay move found and did.
type moveResult struct {
	move.Report
	From string `json:"from"`
	To   string `json:"to"`
	// failed: the run ended in an error, which says what to do instead
	// of the next step.
	failed bool
}

func (r moveResult) Text(w io.Writer) {
	if r.State == "" {
		return
	}
	f := func(what string, x move.Figures) {
		fmt.Fprintf(w, "%s: %d commands, sequences %d to %d, %d gaps\n", what, x.Messages, x.FirstSeq, x.LastSeq, x.Gaps)
	}
	if !r.SourceDeleted {
		f("journal "+r.From, r.Source)
	}
	if r.Target != (move.Figures{}) || r.State != move.StateDryRun {
		f("copy "+r.To, r.Target)
	}
	if v := r.Verified; v != nil {
		fmt.Fprintf(w, "verified up to sequence %d: %s: %s; %s: %s\n", v.UpTo, r.From, v.Source, r.To, v.Target)
	}
	if len(r.Consumers) > 0 {
		var cs []string
		for _, c := range r.Consumers {
			cs = append(cs, fmt.Sprintf("%s from %d", c.Name, c.From))
		}
		fmt.Fprintf(w, "consumers on %s: %s\n", r.To, strings.Join(cs, ", "))
	}
	if r.failed {
		return
	}
	switch r.State {
	case move.StateDryRun:
		fmt.Fprintf(w, "dry run: nothing was created; --apply copies the journal into %s while it takes commands, --apply --cutover makes %s the journal\n", r.To, r.To)
	case move.StateCopying:
		fmt.Fprintf(w, "%s is copying; run the same command again to go on\n", r.To)
	case move.StateCopied:
		if r.Retired {
			fmt.Fprintf(w, "copied: %s takes no commands since a cutover was interrupted; run again with --cutover to finish it\n", r.From)
			return
		}
		fmt.Fprintf(w, "copied: %s follows %s; stop the projectors, then run again with --cutover\n", r.To, r.From)
	case move.StateMoved:
		fmt.Fprintf(w, "moved: %s is the journal; run projectors, writers and replay with --stream %s (or %s=%s), clients with WithStream(%q)\n", r.To, r.To, cli.EnvStream, r.To, r.To)
		if r.SourceDeleted {
			fmt.Fprintf(w, "the old stream %s is deleted\n", r.From)
		} else {
			fmt.Fprintf(w, "the old stream %s takes no commands but still holds them all: delete it with --delete-old once satisfied\n", r.From)
		}
	}
}
