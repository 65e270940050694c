package replaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/replay/retention"
)

// pruneCmd is replay prune.
type pruneCmd struct {
	replayBase
	cfg  retention.PruneConfig
	pk   string
	keep string
}

func (c *pruneCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Table, "table", "", "table (required)")
	fs.StringVar(&c.pk, "pk", "", "partition key: prune one partition (default every partition)")
	fs.StringVar(&c.keep, "keep", "", "keep the versions current at some point of this last span: 90d, 12h, 30m")
	fs.IntVar(&c.cfg.KeepVersions, "keep-versions", 0, "keep at least the newest N versions of every row")
	fs.Uint64Var(&c.cfg.Before, "before", 0, "the horizon itself: a journal sequence")
	fs.BoolVar(&c.cfg.Apply, "apply", false, "publish the prunes, partition by partition, and wait for their outcomes (default: dry run, count what would go)")
	fs.DurationVar(&c.cfg.Pace, "pace", 100*time.Millisecond, "pause between two prune commands with --apply")
	fs.IntVar(&c.cfg.MaxRows, "max-rows", retention.DefaultPruneMaxRows, "most rows one prune command removes; a partition with more gets several, with rising horizons")
}

func (c *pruneCmd) check() error {
	if err := c.need("table"); err != nil {
		return err
	}
	if c.keep != "" {
		d, err := parseKeep(c.keep)
		if err != nil {
			return err
		}
		c.cfg.Keep = d
	}
	if c.cfg.Keep <= 0 && c.cfg.KeepVersions <= 0 && c.cfg.Before == 0 {
		return errors.New("replay prune needs a policy: --keep, --keep-versions or --before")
	}
	if c.cfg.Pace < 0 || c.cfg.MaxRows <= 0 {
		return errors.New("--pace is negative or --max-rows not positive")
	}
	return nil
}

// parseKeep reads a span: a Go duration, or a whole number of days ("90d").
func parseKeep(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("--keep %q: want a positive number of days, like 90d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--keep %q: want a positive span, like 90d or 12h", s)
	}
	return d, nil
}

func (c *pruneCmd) nats() natsNeed {
	if c.cfg.Apply || c.cfg.Keep > 0 {
		return natsYes // publishing, or resolving a time to a sequence
	}
	return natsIfUp
}

func (c *pruneCmd) run(ctx context.Context, stdio cli.IO) error {
	c.cfg.Partition = partition(c.set, c.pk)
	res := pruneResult{Applied: c.cfg.Apply, Table: c.cfg.Table, Partitions: []prunePartJSON{}}
	st, err := retention.NewPruner(c.rp).Prune(ctx, c.cfg, func(p retention.PrunePartition) error {
		res.Partitions = append(res.Partitions, prunePartJSON{PK: p.PK, Horizon: p.Horizon, Rows: p.Rows, Prunes: p.Prunes, Command: p.Command})
		return nil
	})
	res.Rows = st.Rows
	cli.Render(stdio.Stdout, c.asJSON, res)
	return err
}

// pruneResult is what replay prune did, or would do.
type pruneResult struct {
	Applied    bool            `json:"applied"`
	Table      string          `json:"table"`
	Rows       int64           `json:"rows"`
	Partitions []prunePartJSON `json:"partitions"`
}

type prunePartJSON struct {
	PK      string `json:"pk"`
	Horizon uint64 `json:"horizon"`
	Rows    int64  `json:"rows"`
	Prunes  int    `json:"prunes"`
	Command string `json:"command,omitempty"`
}

func (r pruneResult) Text(w io.Writer) {
	for _, p := range r.Partitions {
		fmt.Fprintf(w, "%s %q: %d rows before sequence %d in %d prunes", r.Table, p.PK, p.Rows, p.Horizon, p.Prunes)
		if p.Command != "" {
			fmt.Fprintf(w, " removed by %s", p.Command)
		}
		fmt.Fprintln(w)
	}
	verb := "would remove"
	if r.Applied {
		verb = "removed"
	}
	fmt.Fprintf(w, "%s %d rows in %d partitions\n", verb, r.Rows, len(r.Partitions))
	if !r.Applied && r.Rows > 0 {
		fmt.Fprintln(w, "dry run: nothing was published; --apply publishes the prunes")
	}
}
