package projectorcmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/wire"
)

// resumeCmd is projector resume.
type resumeCmd struct {
	nf        cli.NATSFlags
	stream    string
	durable   string
	table, pk string
}

const resumeMore = `Asks the running projectors to try a held partition again now: one whose
table holds a row the projector did not write (a fence, tip or version row
key without its columns), so its commands wait while every other partition
goes on (docs/operating.md, "A held partition"). Deal with the row first
(remove it, or move the partition's data elsewhere); the projectors also try
again by themselves, every 30 seconds doubling to 10 minutes. A partition
whose row is still there is held again, and reported again.

It removes the partition's held entry from the record that projector status
lists; the projectors see it go and try at once. --pk names the partition
(without it, every held partition of --table).
`

// projectorResume runs projector resume.
func projectorResume(ctx context.Context, args []string, stdio cli.IO) error {
	var c resumeCmd
	fs := cli.QuietFlagSet("projector resume")
	c.nf.Register(fs, cli.DefaultNATSURL)
	fs.StringVar(&c.stream, "stream", cli.EnvOr(cli.EnvStream, wire.JournalStream), "journal stream name (env "+cli.EnvStream+")")
	fs.StringVar(&c.durable, "durable", wire.DefaultDurable, "the projectors' durable consumer prefix")
	fs.StringVar(&c.table, "table", "", "the held partition's table (required)")
	fs.StringVar(&c.pk, "pk", "", "the held partition's key (default: every held partition of --table)")
	if err := cli.ParseArgs(fs, args, stdio.Stdout, cli.SubUsage("projector", projectorCommands[2], resumeMore)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError(fmt.Errorf("unexpected argument %q; projector resume takes only flags", fs.Arg(0)))
	}
	if c.table == "" {
		return cli.UsageError(fmt.Errorf("--table is required"))
	}
	pkSet := false
	fs.Visit(func(f *flag.Flag) { pkSet = pkSet || f.Name == "pk" })
	nc, js, err := c.nf.Connect(ctx, "tablejournal-projector-resume")
	if err != nil {
		return err
	}
	defer nc.Close()
	rctx, cancel := context.WithTimeout(ctx, cli.WaitTimeout)
	defer cancel()
	rec, err := lost.Open(rctx, js, c.stream, c.durable)
	if err != nil {
		return err
	}
	es, err := rec.List(rctx, wire.TableToken(c.table))
	if err != nil {
		return err
	}
	n := 0
	for _, e := range es {
		if !e.Held() || (pkSet && e.PK != c.pk) {
			continue
		}
		ok, err := rec.Remove(rctx, e.Table, e.PK, e.Revision)
		if err != nil {
			return err
		}
		if ok {
			n++
			fmt.Fprintf(stdio.Stdout, "resuming %s\n", e.BehindPartition)
		}
	}
	if n == 0 {
		fmt.Fprintf(stdio.Stdout, "no partition of table %s is held\n", c.table)
		return nil
	}
	fmt.Fprintf(stdio.Stdout, "the projectors try %s again now; projector status lists it again if its row is still there\n",
		cli.Plural(int64(n), "partition"))
	return nil
}
