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
	for _, f := range []string{"into", "from-snapshot", "to", "seq", "time", "resume"} {
		if c.set[f] {
			return fmt.Errorf("replay rebuild --pk rebuilds the partition in place, up to the journal's head: drop --%s", f)
		}
	}
	return nil
}

// runPartition rebuilds one partition in place (rebuild.RebuildPartition).
func (c *rebuildCmd) runPartition(ctx context.Context, stdio cli.IO) error {
	st, err := rebuild.New(c.rp).RebuildPartition(ctx, c.cfg.Table, c.pk)
	if err != nil {
		return err
	}
	cli.Render(stdio.Stdout, c.asJSON, partitionView{Table: st.Table, PK: st.PK, Removed: st.Removed, To: st.To,
		Commands: st.Commands, Applied: st.Applied, Rejected: st.Rejected, Duplicates: st.Duplicates,
		Seconds: st.Elapsed.Seconds(), elapsed: st.Elapsed})
	return nil
}

// partitionView is replay rebuild --pk. Its JSON keys stay in
// alphabetical order.
type partitionView struct {
	Applied    int64   `json:"applied"`
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
	fmt.Fprintf(w, "rebuilt partition %q of %s in place up to seq %d: removed %s, applied the journal again: %s (%d applied, %d rejected, %s) in %s\n",
		r.PK, r.Table, r.To, cli.Plural(r.Removed, "row"), cli.Plural(r.Commands, "command"), r.Applied, r.Rejected,
		cli.Plural(r.Duplicates, "duplicate"), r.elapsed.Round(time.Millisecond))
}
