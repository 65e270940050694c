package replaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/retention"
)

// compactCmd is replay compact: the journal horizon (docs/replay.md).
type compactCmd struct {
	replayBase
	table    string
	snapshot string
	at       uint64
	apply    bool
}

func (c *compactCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.table, "table", "", "the table whose commands below the snapshot's sequence are trimmed (required)")
	fs.StringVar(&c.snapshot, "snapshot", "", "the snapshot: an existing one is checked, a missing one is taken (a file, or azblob://CONTAINER/BLOB in the --tables account; a blob URL's SAS token is not recorded) (required)")
	fs.Uint64Var(&c.at, "at", 0, "the sequence of the snapshot taken (default: the highest the projector has fully applied); an existing snapshot must be at it")
	fs.BoolVar(&c.apply, "apply", false, "record the horizon in the journal's metadata, then trim (default: dry run, say what would be trimmed)")
}

func (c *compactCmd) check() error   { return c.need("table", "snapshot") }
func (c *compactCmd) nats() natsNeed { return natsYes }

func (c *compactCmd) run(ctx context.Context, stdio cli.IO) error {
	if c.set["at"] && c.at == 0 {
		return cli.UsageError(errors.New("--at 0 is the empty table; give a journal sequence"))
	}
	p, err := retention.NewCompactor(c.rp).PlanCompactAt(ctx, retention.CompactAtConfig{
		Table: c.table, Snapshot: c.snapshot, Tables: c.tables, Auth: c.auth, At: c.at})
	if err != nil {
		return err
	}
	return runPlan(ctx, &c.replayBase, stdio, p, planRun{apply: c.apply, show: func(res *replay.Result, err error) cli.Result {
		if err != nil {
			return nil
		}
		h := p.Horizon
		return compactResult{Applied: res != nil, Table: c.table, Snapshot: h.Snapshot, Taken: p.Taken,
			Seq: h.Seq, SHA256: h.SHA256, Previous: p.Previous, Commands: p.Commands}
	}})
}

// compactResult is what replay compact did, or would do.
type compactResult struct {
	Applied  bool   `json:"applied"`
	Table    string `json:"table"`
	Snapshot string `json:"snapshot"`
	Taken    bool   `json:"taken"`
	Seq      uint64 `json:"seq"`
	SHA256   string `json:"sha256"`
	Previous uint64 `json:"previous,omitempty"`
	Commands int64  `json:"commands"`
}

func (r compactResult) Text(w io.Writer) {
	how := "checked"
	if r.Taken {
		how = "taken"
	}
	fmt.Fprintf(w, "snapshot %s of %s at sequence %d %s (sha256 %s)\n", r.Snapshot, r.Table, r.Seq, how, r.SHA256)
	if r.Applied {
		fmt.Fprintf(w, "horizon of %s recorded at %d; trimmed %d commands of %s before it\n", r.Table, r.Seq, r.Commands, r.Table)
		return
	}
	fmt.Fprintf(w, "would trim %d commands of %s before sequence %d\n", r.Commands, r.Table, r.Seq)
	fmt.Fprintln(w, "dry run: nothing was recorded or trimmed; --apply records the horizon and trims")
}

// recordedSnapshot opens the snapshot recorded at the table's journal
// horizon, for a rebuild without --from-snapshot (recordedSnapshotFor).
func (c *rebuildCmd) recordedSnapshot(ctx context.Context, stdio cli.IO) (io.Closer, error) {
	f, err := recordedSnapshotFor(ctx, &c.replayBase, stdio, "rebuild", c.cfg.Table, c.cfg.To)
	if f != nil {
		c.cfg.Snapshot = f
		return f, err
	}
	return nil, err
}

// recordedSnapshotFor opens the snapshot recorded at table's journal
// horizon, checked (retention.Compactor.RecordedSnapshot), for what
// (rebuild, verify) up to the sequence to (0: the head), and says so on
// stderr; nil when the table has no horizon or to is before it (the
// replayer then refuses, naming it).
func recordedSnapshotFor(ctx context.Context, b *replayBase, stdio cli.IO, what, table string, to uint64) (io.ReadCloser, error) {
	f, h, err := retention.NewCompactor(b.rp).RecordedSnapshot(ctx, table, to, b.tables, b.auth)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (give --from-snapshot)", what, err)
	}
	if f == nil {
		return nil, nil
	}
	fmt.Fprintf(stdio.Stderr, "%s: the journal of %s is trimmed below sequence %d; loading its recorded snapshot %s (sha256 %s)\n", what, table, h.Seq, h.Snapshot, h.SHA256)
	return f, nil
}
