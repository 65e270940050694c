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
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/retention"
)

// pruneCmd is replay prune.
type pruneCmd struct {
	replayBase
	cfg   retention.PruneConfig
	pk    string
	keep  string
	apply bool
}

func (c *pruneCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Table, "table", "", "table (required)")
	fs.StringVar(&c.pk, "pk", "", "partition key: prune one partition (default every partition)")
	fs.StringVar(&c.keep, "keep", "", "keep the versions current at some point of this last span: 90d, 12h, 30m")
	fs.IntVar(&c.cfg.KeepVersions, "keep-versions", 0, "keep at least the newest N versions of every row")
	fs.Uint64Var(&c.cfg.Before, "before", 0, "the horizon itself: a journal sequence")
	fs.BoolVar(&c.apply, "apply", false, "publish the prunes, partition by partition, and wait for their outcomes (default: dry run, count what would go)")
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
	if c.apply || c.cfg.Keep > 0 {
		return natsYes // publishing, or resolving a time to a sequence
	}
	return natsIfUp
}

func (c *pruneCmd) run(ctx context.Context, stdio cli.IO) error {
	c.cfg.Partition = partition(c.set, c.pk)
	p, err := retention.NewPruner(c.rp).PlanPrune(ctx, c.cfg)
	if err != nil {
		return err
	}
	return runPlan(ctx, &c.replayBase, stdio, p, planRun{apply: c.apply, show: func(res *replay.Result, _ error) cli.Result {
		return newPruneResult(p, res)
	}})
}

// newPruneResult is what plan p would do or, applied, did: the partitions
// whose prunes were all published, with the rows their outcomes removed.
func newPruneResult(p *retention.PrunePlan, res *replay.Result) pruneResult {
	r := pruneResult{Applied: res != nil, Table: p.Config.Table, Partitions: []prunePartJSON{}}
	var pubs []replay.Published
	if res != nil {
		pubs = res.Published
	}
	for _, part := range p.Partitions {
		pj := prunePartJSON{PK: part.PK, Horizon: part.Horizon, Rows: part.Rows, Prunes: len(part.Horizons)}
		if res != nil {
			if len(pubs) < len(part.Horizons) {
				break // not applied: the apply stopped before
			}
			pj.Rows = 0
			for _, pub := range pubs[:len(part.Horizons)] {
				pj.Rows += pub.Outcome.Pruned
				pj.Command = pub.ID
			}
			pubs = pubs[len(part.Horizons):]
		}
		r.Partitions = append(r.Partitions, pj)
		r.Rows += pj.Rows
	}
	return r
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
