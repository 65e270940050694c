package replaycmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/replay/rebuild"
)

// checkPartition checks the flags of replay rebuild --pk: one partition
// of --table rebuilt in place, nothing else.
func (c *rebuildCmd) checkPartition() error {
	if !c.set["table"] {
		return errors.New("replay rebuild --pk needs --table")
	}
	return c.refuseInPlace("--pk rebuilds the partition", "behind")
}

// refuseInPlace refuses the flags of a rebuild into another table, and
// the other in-place flags, for a rebuild in place.
func (c *rebuildCmd) refuseInPlace(what string, other string) error {
	for _, f := range []string{"into", "from-snapshot", "to", "seq", "time", "resume", other} {
		if c.set[f] {
			return fmt.Errorf("replay rebuild %s in place, up to the journal's head: drop --%s", what, f)
		}
	}
	return nil
}

// checkBehind checks the flags of replay rebuild --behind.
func (c *rebuildCmd) checkBehind() error {
	return c.refuseInPlace("--behind rebuilds the partitions", "pk")
}

// runBehind rebuilds in place the partitions recorded behind
// (rebuild.RebuildBehind) and says what it rebuilt and what is left.
func (c *rebuildCmd) runBehind(ctx context.Context, stdio cli.IO) error {
	st, err := rebuild.New(c.rp).RebuildBehind(ctx, c.cfg.Table)
	v := behindView{Table: c.cfg.Table, Rebuilt: []partitionView{}, Left: []string{}, Seconds: st.Elapsed.Seconds(), elapsed: st.Elapsed}
	for _, p := range st.Rebuilt {
		v.Rebuilt = append(v.Rebuilt, newPartitionView(p))
	}
	for _, b := range st.Left {
		v.Left = append(v.Left, b.String())
	}
	cli.Render(stdio.Stdout, c.asJSON, v)
	return err
}

// behindView is replay rebuild --behind. Its JSON keys stay in
// alphabetical order.
type behindView struct {
	Left    []string        `json:"left"`
	Rebuilt []partitionView `json:"rebuilt"`
	Seconds float64         `json:"seconds"`
	Table   string          `json:"table,omitempty"`

	elapsed time.Duration
}

func (r behindView) Text(w io.Writer) {
	where := "any table"
	if r.Table != "" {
		where = r.Table
	}
	if len(r.Rebuilt) == 0 && len(r.Left) == 0 {
		fmt.Fprintf(w, "no partition of %s is recorded behind the journal: nothing to rebuild\n", where)
		return
	}
	for _, p := range r.Rebuilt {
		p.Text(w)
	}
	fmt.Fprintf(w, "rebuilt %s recorded behind the journal in %s", cli.Plural(int64(len(r.Rebuilt)), "partition"), r.elapsed.Round(time.Millisecond))
	if len(r.Left) == 0 {
		fmt.Fprintf(w, "; none of %s is left behind\n", where)
		return
	}
	fmt.Fprintf(w, "; %s of %s still recorded behind:\n", cli.Plural(int64(len(r.Left)), "partition"), where)
	for _, l := range r.Left {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// runPartition rebuilds one partition in place (rebuild.RebuildPartition).
func (c *rebuildCmd) runPartition(ctx context.Context, stdio cli.IO) error {
	st, err := rebuild.New(c.rp).RebuildPartition(ctx, c.cfg.Table, c.pk)
	if err != nil {
		return err
	}
	cli.Render(stdio.Stdout, c.asJSON, newPartitionView(st))
	return nil
}

func newPartitionView(st rebuild.PartitionStats) partitionView {
	return partitionView{Table: st.Table, PK: st.PK, Removed: st.Removed, To: st.To,
		Commands: st.Commands, Applied: st.Applied, Rejected: st.Rejected, Duplicates: st.Duplicates,
		Seconds: st.Elapsed.Seconds(), Cleared: st.Cleared, elapsed: st.Elapsed}
}

// partitionView is replay rebuild --pk. Its JSON keys stay in
// alphabetical order.
type partitionView struct {
	Applied    int64   `json:"applied"`
	Cleared    bool    `json:"cleared"`
	Commands   int64   `json:"commands"`
	Duplicates int64   `json:"duplicates"`
	PK         string  `json:"pk"`
	Rejected   int64   `json:"rejected"`
	Removed    int64   `json:"removed"`
	Seconds    float64 `json:"seconds"`
	Table      string  `json:"table"`
	To         uint64  `json:"to"`

	elapsed time.Duration
}

func (r partitionView) Text(w io.Writer) {
	cleared := ""
	if r.Cleared {
		cleared = "; no longer recorded behind"
	}
	fmt.Fprintf(w, "rebuilt partition %q of %s in place up to seq %d: removed %s, applied the journal again: %s (%d applied, %d rejected, %s) in %s%s\n",
		r.PK, r.Table, r.To, cli.Plural(r.Removed, "row"), cli.Plural(r.Commands, "command"), r.Applied, r.Rejected,
		cli.Plural(r.Duplicates, "duplicate"), r.elapsed.Round(time.Millisecond), cleared)
}
