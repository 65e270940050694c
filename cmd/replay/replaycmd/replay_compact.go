package replaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/internal/snapfile"
	"github.com/tablejournal/tablejournal/replay"
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
	res := compactResult{Table: c.table, Snapshot: snapfile.Describe(c.snapshot)}
	checked, err := checkSnapshotAt(ctx, c.snapshot, c.tables, c.auth)
	if errors.Is(err, fs.ErrNotExist) || bloberror.HasCode(err, bloberror.BlobNotFound) {
		write := func(w io.Writer) error {
			_, err := c.rp.Snapshot(ctx, w, replay.SnapshotConfig{Table: c.table, Seq: c.at})
			return err
		}
		if err := writeSnapshot(ctx, c.snapshot, c.tables, c.auth, write); err != nil {
			return err
		}
		res.Taken = true
		checked, err = checkSnapshotAt(ctx, c.snapshot, c.tables, c.auth) // what was stored, read back
	}
	if err != nil {
		return err
	}
	if checked.Header.Table != c.table {
		return fmt.Errorf("compact: %w: %s is a snapshot of table %s, not %s", replay.ErrNoSnapshotAtHorizon, res.Snapshot, checked.Header.Table, c.table)
	}
	if c.set["at"] && checked.Header.Seq != c.at {
		return fmt.Errorf("compact: %w: %s is at sequence %d, not %d", replay.ErrNoSnapshotAtHorizon, res.Snapshot, checked.Header.Seq, c.at)
	}
	st, err := c.rp.Compact(ctx, replay.CompactConfig{Snapshot: checked, Location: res.Snapshot, Apply: c.apply})
	if err != nil {
		return err
	}
	res.Seq, res.SHA256, res.Commands, res.Applied, res.Previous = st.Horizon.Seq, st.Horizon.SHA256, st.Commands, st.Applied, st.Previous
	cli.Render(stdio.Stdout, c.asJSON, res)
	return nil
}

// checkSnapshotAt reads the snapshot at loc through (replay.CheckSnapshot).
func checkSnapshotAt(ctx context.Context, loc, tables string, auth azauth.Config) (replay.CheckedSnapshot, error) {
	f, err := snapfile.Open(ctx, loc, tables, auth)
	if err != nil {
		return replay.CheckedSnapshot{}, err
	}
	defer f.Close()
	checked, err := replay.CheckSnapshot(f)
	if err != nil {
		return checked, fmt.Errorf("%s: %w", snapfile.Describe(loc), err)
	}
	return checked, nil
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
// horizon, for what (rebuild, verify) up to the sequence to (0: the head),
// after reading it through and checking its SHA-256 against the recorded
// one, and says so on stderr; nil when the table has no horizon or to is
// before it (the replayer then refuses, naming it).
func recordedSnapshotFor(ctx context.Context, b *replayBase, stdio cli.IO, what, table string, to uint64) (io.ReadCloser, error) {
	h, ok, err := b.rp.Horizon(ctx, table)
	if err != nil || !ok || to != 0 && to < h.Seq {
		return nil, err
	}
	// Read it through first: it is the only record of the trimmed
	// commands, and a different file would rebuild something else.
	checked, err := checkSnapshotAt(ctx, h.Snapshot, b.tables, b.auth)
	if err == nil && checked.SHA256 != h.SHA256 {
		err = fmt.Errorf("its SHA-256 is %s, the horizon recorded %s", checked.SHA256, h.SHA256)
	}
	var f io.ReadCloser
	if err == nil {
		f, err = snapfile.Open(ctx, h.Snapshot, b.tables, b.auth)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the journal of %s is trimmed below %d; its recorded snapshot %s: %w (give --from-snapshot)", what, table, h.Seq, h.Snapshot, err)
	}
	fmt.Fprintf(stdio.Stderr, "%s: the journal of %s is trimmed below sequence %d; loading its recorded snapshot %s (sha256 %s)\n", what, table, h.Seq, h.Snapshot, h.SHA256)
	return f, nil
}
