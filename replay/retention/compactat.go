package retention

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/replay/snapshot"
)

// CompactAtConfig configures PlanCompactAt.
type CompactAtConfig struct {
	// Table is the table whose commands below the snapshot's sequence are
	// trimmed. Required.
	Table string
	// Snapshot is where the snapshot is (snapshot.Open): an existing one is
	// checked, a missing one is taken there. Required.
	Snapshot string
	// Tables is the table store's connection string, whose account holds
	// the blobs named azblob://; empty for files and blob URLs.
	Tables string
	// Auth is how to authenticate to a blob (snapshot.Open).
	Auth azauth.Config
	// At is the sequence of the snapshot taken, and the one an existing
	// snapshot must be at. If zero, a snapshot is taken at the highest
	// sequence the projector has fully applied, and an existing one may be
	// at any.
	At uint64
}

// PlanCompactAt is PlanCompact with the snapshot named by its location: it
// checks the snapshot there (reading it through), or takes it there when
// it does not exist and reads back what was stored (the one thing planning
// writes); refuses a snapshot of another table or at another sequence than
// At (ErrNoSnapshotAtHorizon); then plans the trim of the journal below it.
// The plan's Horizon.Snapshot is the location as recorded: without a blob
// URL's SAS token (snapshot.Describe).
func (c *Compactor) PlanCompactAt(ctx context.Context, cfg CompactAtConfig) (*CompactPlan, error) {
	loc, err := snapshot.Recorded(cfg.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	taken := false
	checked, err := snapshot.CheckAt(ctx, cfg.Snapshot, cfg.Tables, cfg.Auth)
	if errors.Is(err, fs.ErrNotExist) || bloberror.HasCode(err, bloberror.BlobNotFound) {
		write := func(w io.Writer) error {
			_, err := snapshot.New(c.Source).Take(ctx, w, snapshot.Config{Table: cfg.Table, Seq: cfg.At})
			return err
		}
		if err := snapshot.WriteAt(ctx, cfg.Snapshot, cfg.Tables, cfg.Auth, write); err != nil {
			return nil, err
		}
		taken = true
		checked, err = snapshot.CheckAt(ctx, cfg.Snapshot, cfg.Tables, cfg.Auth) // what was stored, read back
	}
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(checked.Header.Table, cfg.Table) { // table names are case-insensitive
		return nil, fmt.Errorf("compact: %w: %s is a snapshot of table %s, not %s", ErrNoSnapshotAtHorizon, loc, checked.Header.Table, cfg.Table)
	}
	if cfg.At != 0 && checked.Header.Seq != cfg.At {
		return nil, fmt.Errorf("compact: %w: %s is at sequence %d, not %d", ErrNoSnapshotAtHorizon, loc, checked.Header.Seq, cfg.At)
	}
	p, err := c.PlanCompact(ctx, CompactConfig{Snapshot: checked, Location: loc})
	if p != nil {
		p.Taken = taken
	}
	return p, err
}

// RecordedSnapshot opens the snapshot recorded at table's journal horizon,
// for a rebuild or verify of table up to sequence to (0: the head), after
// reading it through and checking its SHA-256 against the recorded one: it
// is the only record of the trimmed commands, and a different file would
// rebuild something else. It returns a nil reader when the table has no
// horizon or to is before it (a rebuild then refuses, naming it). tables
// is the table store's connection string, for a blob named azblob://, and
// auth how to authenticate to a blob.
func (c *Compactor) RecordedSnapshot(ctx context.Context, table string, to uint64, tables string, auth azauth.Config) (io.ReadCloser, Horizon, error) {
	h, ok, err := c.Horizon(ctx, table)
	if err != nil || !ok || to != 0 && to < h.Seq {
		return nil, h, err
	}
	checked, err := snapshot.CheckAt(ctx, h.Snapshot, tables, auth)
	if err == nil && checked.SHA256 != h.SHA256 {
		err = fmt.Errorf("its SHA-256 is %s, the horizon recorded %s", checked.SHA256, h.SHA256)
	}
	var f io.ReadCloser
	if err == nil {
		f, err = snapshot.Open(ctx, h.Snapshot, tables, auth)
	}
	if err != nil {
		return nil, h, fmt.Errorf("the journal of %s is trimmed below %d; its recorded snapshot %s: %w", table, h.Seq, h.Snapshot, err)
	}
	return f, h, nil
}
