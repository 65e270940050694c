package writercmd

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// layoutUsage is writer layout's --help.
const layoutUsage = `Usage:
  writer layout --table T --plain|--versioned [flags]

Sets the row layout of a table that has no command yet (docs/SPEC.md §3 and
§4): --plain keeps the table's current rows at the service's own keys, so
readers with the Azure SDK see the table as they wrote it, and its history in
the table T + "History"; --versioned (the default of every table never set)
keeps tip and version rows in the table. The setting is a message of the
journal, so every projector and every rebuild projects the table alike. It is
refused for a table that has commands (rebuild it --into a new table set
first), or whose layout is set to the other one; setting the same layout again
is not an error.

Every projector must run a version that knows layouts before a table is set
plain: an older one would project it versioned.

Output: "table T: LAYOUT (journal sequence N)"; with --json
  {"table":T,"layout":LAYOUT,"seq":N}

Exit status:
  0  set (or set already to that layout)
  1  an error: connecting, the table has commands or another layout
  2  a command-line mistake

Flags:
`

// layoutCmd is writer layout.
type layoutCmd struct {
	writerBase
	table            string
	plain, versioned bool
}

// runLayout runs writer layout with args (after the subcommand's name).
func runLayout(ctx context.Context, args []string, stdio cli.IO) error {
	c := &layoutCmd{}
	fs := cli.QuietFlagSet("writer layout")
	c.version = cli.VersionFlag(fs)
	c.nf.Register(fs, cli.DefaultNATSURL)
	fs.StringVar(&c.stream, "stream", cli.EnvOr(cli.EnvStream, wire.JournalStream), "journal stream name (env "+cli.EnvStream+")")
	fs.BoolVar(&c.jsonOut, "json", false, "print one JSON object instead of text")
	fs.DurationVar(&c.timeout, "timeout", cli.WaitTimeout, "how long to wait for the journal")
	fs.StringVar(&c.table, "table", "", "the table (required)")
	fs.BoolVar(&c.plain, "plain", false, "the plain layout: current rows in the table, history beside it")
	fs.BoolVar(&c.versioned, "versioned", false, "the versioned layout (every table's default)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		cli.PrintHelp(stdio.Stdout, layoutUsage, fs)
		return flag.ErrHelp
	} else if err != nil {
		return cli.FlagError(err)
	}
	if *c.version {
		cli.PrintVersion(stdio.Stdout, "writer")
		return nil
	}
	switch {
	case fs.NArg() > 0:
		return cli.UsageError(fmt.Errorf("unexpected argument %q: layout takes only flags", fs.Arg(0)))
	case c.table == "":
		return cli.UsageError(errors.New("--table is required"))
	case c.plain == c.versioned:
		return cli.UsageError(errors.New("want one of --plain and --versioned"))
	}
	l := wire.LayoutVersioned
	if c.plain {
		l = wire.LayoutPlain
	}
	nc, js, err := c.nf.Connect(ctx, "tablejournal-writer")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.checkStreams(ctx, js); err != nil {
		return err
	}
	j, err := journal.Open(ctx, js, c.stream)
	if err != nil {
		return err
	}
	seq, err := tablelayout.Set(ctx, j, c.table, l)
	if err != nil {
		return err
	}
	if c.jsonOut {
		cli.PrintJSON(stdio.Stdout, struct {
			Table  string      `json:"table"`
			Layout wire.Layout `json:"layout"`
			Seq    uint64      `json:"seq"`
		}{c.table, l, seq})
		return nil
	}
	fmt.Fprintf(stdio.Stdout, "table %s: %s (journal sequence %d)\n", c.table, l, seq)
	return nil
}
