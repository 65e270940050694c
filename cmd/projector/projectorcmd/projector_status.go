package projectorcmd

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/projection/status"
	"github.com/tablejournal/tablejournal/wire"
)

// statusCmd is projector status.
type statusCmd struct {
	nf     cli.NATSFlags
	cfg    status.Config
	asJSON bool
	watch  bool
	every  time.Duration
}

func (c *statusCmd) flags(fs *flag.FlagSet) {
	c.nf.Register(fs, cli.DefaultNATSURL)
	fs.StringVar(&c.cfg.Journal, "stream", cli.EnvOr(cli.EnvStream, wire.JournalStream), "journal stream name (env "+cli.EnvStream+")")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON (with --watch, one object per line)")
	fs.BoolVar(&c.watch, "watch", false, "refresh in place until interrupted")
	fs.DurationVar(&c.every, "interval", 2*time.Second, "refresh interval of --watch")
}

const statusMore = `Shows each shard of the journal from NATS alone (no table credentials): the
instance applying it, the journal sequence it is applied up to, the commands
pending, the age of the oldest of them, and the rate over the last minute,
with totals at the bottom. Below them, STORE BEHIND lists the partitions
recorded behind the journal (the store lost writes it confirmed), whether a
projector runs or not, until replay rebuild --behind rebuilds them. --watch
refreshes in place until interrupted.

Exits with status 4 when a shard has pending commands and no owner.
`

// projectorStatus runs projector status.
func projectorStatus(ctx context.Context, args []string, stdio cli.IO) error {
	var c statusCmd
	fs := cli.QuietFlagSet("projector status")
	c.flags(fs)
	if err := cli.ParseArgs(fs, args, stdio.Stdout, cli.SubUsage("projector", projectorCommands[1], statusMore)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError(fmt.Errorf("unexpected argument %q; projector status takes only flags", fs.Arg(0)))
	}
	if c.every <= 0 {
		return cli.UsageError(fmt.Errorf("--interval must be positive, not %v", c.every))
	}
	return c.run(ctx, stdio)
}

func (c *statusCmd) run(ctx context.Context, stdio cli.IO) error {
	stdout := stdio.Stdout
	nc, js, err := c.nf.Connect(ctx, "tablejournal-projector-status")
	if err != nil {
		return err
	}
	defer nc.Close()
	read := func() (status.Overview, error) {
		rctx, cancel := context.WithTimeout(ctx, cli.WaitTimeout)
		defer cancel()
		return status.Read(rctx, js, c.cfg)
	}
	if !c.watch {
		ov, err := read()
		if err != nil {
			return err
		}
		if err := writeStatus(stdout, ov, c.asJSON); err != nil {
			return err
		}
		if len(ov.Totals.Unowned) > 0 {
			return fmt.Errorf("%w: shards %v have pending commands and no owner", cli.ErrUnowned, ov.Totals.Unowned)
		}
		return nil
	}
	inPlace := !c.asJSON && stdio.Terminal(stdout)
	t := time.NewTicker(c.every)
	defer t.Stop()
	for {
		var buf bytes.Buffer
		if inPlace {
			buf.WriteString("\x1b[H\x1b[2J") // cursor home, clear screen
		}
		ov, err := read()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && c.asJSON:
			// One object per line, still: the error in place of a status.
			cli.PrintJSON(&buf, cli.ErrorJSON{Error: err.Error()})
		case err != nil:
			fmt.Fprintf(&buf, "%s  error: %v\n", stdio.Time().Format(time.TimeOnly), err)
		default:
			if err := writeStatus(&buf, ov, c.asJSON); err != nil {
				return err
			}
			if !c.asJSON {
				fmt.Fprintf(&buf, "\n%s, every %v; Ctrl-C to stop\n", ov.At.Local().Format(time.TimeOnly), c.every)
			}
		}
		if !inPlace && !c.asJSON {
			buf.WriteString("\n")
		}
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// writeStatus prints an overview as a table with totals, or as JSON.
func writeStatus(w io.Writer, ov status.Overview, asJSON bool) error {
	if asJSON {
		if ov.Totals.Unowned == nil {
			ov.Totals.Unowned = []int{}
		}
		cli.PrintJSON(w, ov)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SHARD\tOWNER\tAPPLIED\tPENDING\tLAG\tRATE/S\t")
	for _, s := range ov.Shards {
		owner, applied := s.Owner, strconv.FormatUint(s.Applied, 10)
		if owner == "" {
			owner = "-"
		}
		if !s.Consumer {
			applied = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%.1f\t\n", s.Shard, owner, applied, s.Pending, lag(s.LagSeconds), s.Rate)
	}
	t := ov.Totals
	fmt.Fprintf(tw, "total\t%d/%d owned\t\t%d\t%s\t%.1f\t\n", t.Owned, t.Shards, t.Pending, lag(t.MaxLagSeconds), t.Rate)
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := prunedLine(w, t); err != nil {
		return err
	}
	if err := behindLines(w, t); err != nil {
		return err
	}
	if len(t.Unowned) > 0 {
		_, err := fmt.Fprintf(w, "shards %v have pending commands and no owner\n", t.Unowned)
		return err
	}
	return nil
}

// lag formats seconds of lag to a tenth of a second.
func lag(secs float64) string {
	if secs == 0 {
		return "0s"
	}
	return (time.Duration(secs * float64(time.Second))).Round(100 * time.Millisecond).String()
}
