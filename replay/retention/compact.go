package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/wire"
)

// The journal horizon (issue 19, SPEC §3): a table's commands before a
// sequence S are purged from the journal once a snapshot of the table at S
// is stored; the snapshot stands for them.
//
// The horizon is per table. JetStream purges with a subject filter and a
// sequence (journal.<table-token>.*.* below S), so one table's commands can go
// while another's stay; the journal's first sequence then says nothing of
// a table, which is why every horizon is recorded in the stream's own
// metadata, under MetadataHorizonPrefix+table token (horizonKey), before the purge: whoever
// reads the table's commands (Rebuild) checks it there.

// MetadataHorizonPrefix prefixes the JOURNAL stream metadata key of a
// table's horizon: "tablejournal.horizon.<table-token>" (the table in
// lower case, wire.TableToken), whose value is a
// Horizon in JSON.
const MetadataHorizonPrefix = "tablejournal.horizon."

// Errors of the journal horizon.
var (
	// ErrBeforeHorizon: the point asked for is before the table's journal
	// horizon; the commands before it are gone from the journal, and only
	// the recorded snapshot (at the horizon) stands for them.
	ErrBeforeHorizon = errors.New("before the journal horizon")
	// ErrTrimDenied: the journal denies purges (created without
	// --journal-allow-trim); JetStream cannot lift deny_purge.
	ErrTrimDenied = errors.New("the journal denies purges")
	// ErrNoSnapshotAtHorizon: trimming below a sequence without a checked
	// snapshot of the table at that sequence or later.
	ErrNoSnapshotAtHorizon = errors.New("no snapshot at the horizon")
)

// Horizon is a table's journal horizon as recorded in the stream's
// metadata: the journal holds none of the table's commands before Seq, and
// the snapshot at Snapshot, consistent at Seq, stands for them.
type Horizon struct {
	Table string `json:"table"`
	// Seq is the snapshot's sequence: commands of the table before it are
	// purged (Seq itself stays; the snapshot already holds its effect).
	Seq uint64 `json:"seq"`
	// Snapshot is where the snapshot is stored: a file path, or a blob
	// location without its SAS token (snapshot.Describe).
	Snapshot string `json:"snapshot"`
	// SHA256 is the hex SHA-256 of the snapshot file's bytes.
	SHA256 string `json:"sha256"`
	// Recorded is when the horizon was recorded.
	Recorded time.Time `json:"recorded"`
}

// Horizon returns the journal horizon recorded for table, and false if
// there is none.
func (r *Compactor) Horizon(ctx context.Context, table string) (Horizon, bool, error) {
	if err := r.NeedJournal("horizon"); err != nil {
		return Horizon{}, false, err
	}
	s, err := r.JetStream().Stream(ctx, r.Journal().Name())
	if err != nil {
		return Horizon{}, false, fmt.Errorf("horizon: %w", err)
	}
	return horizonOf(s.CachedInfo().Config, table)
}

// horizonKey is the metadata key of table's horizon: the table's
// lower-case token (wire.TableToken), as table names are case-insensitive.
func horizonKey(table string) string {
	return MetadataHorizonPrefix + wire.TableToken(table)
}

// horizonOf returns table's horizon in cfg's metadata. It is recorded
// under horizonKey; a journal compacted before the key was lower case may
// hold it under the table as spelled then, in any case: the latest of
// them is the horizon.
func horizonOf(cfg jetstream.StreamConfig, table string) (Horizon, bool, error) {
	var (
		h     Horizon
		found bool
	)
	for _, k := range horizonKeys(cfg.Metadata, table) {
		var x Horizon
		raw := cfg.Metadata[k]
		if err := json.Unmarshal([]byte(raw), &x); err != nil || x.Seq == 0 {
			return Horizon{}, false, fmt.Errorf("journal %s: metadata %s is not a horizon: %q", cfg.Name, k, raw)
		}
		if !found || x.Seq > h.Seq {
			h, found = x, true
		}
	}
	return h, found, nil
}

// horizonKeys returns the metadata keys that name table's horizon, in any
// case.
func horizonKeys(md map[string]string, table string) []string {
	var keys []string
	for k := range md {
		if t, ok := strings.CutPrefix(k, MetadataHorizonPrefix); ok && strings.EqualFold(t, table) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// CompactConfig configures PlanCompact.
type CompactConfig struct {
	// Snapshot is the checked snapshot (snapshot.Check) of the table the
	// journal is trimmed for, below its sequence. Required.
	Snapshot snapshot.Checked
	// Location is where the snapshot is stored, recorded in the horizon; it
	// must carry no secret (snapshot.Describe). Required.
	Location string
}

// CompactPlan is the trim of one table's journal below a snapshot of it:
// a replay.Plan (compactpreview.go).
type CompactPlan struct {
	// Horizon is the horizon Apply records (Recorded is set then).
	Horizon Horizon
	// Previous is the table's horizon before, zero if none.
	Previous uint64
	// Commands counts the table's commands before the horizon still in
	// the journal: those Apply purges.
	Commands int64
	// Taken is set when the snapshot did not exist and PlanCompactAt took
	// it.
	Taken bool

	snapshot  snapshot.Checked
	stream    jetstream.Stream
	compactor *Compactor
}

// PlanCompact plans the trim of the journal of one table below a snapshot
// of it, changing nothing: it checks that the journal allows purges
// (ErrTrimDenied), that the snapshot is of this journal at a sequence the
// projector has fully applied (ErrNoSnapshotAtHorizon) and not before the
// table's horizon, and counts the commands that would go. The plan's
// Apply records the horizon in the stream's metadata, and only then purges
// the table's commands before the snapshot's sequence. A crash between
// recording and purging leaves a horizon whose commands are still there:
// harmless, and a compaction planned and applied again finishes the purge.
func (r *Compactor) PlanCompact(ctx context.Context, cfg CompactConfig) (*CompactPlan, error) {
	hd := cfg.Snapshot.Header
	p := &CompactPlan{Horizon: Horizon{Table: hd.Table, Seq: hd.Seq, Snapshot: cfg.Location, SHA256: cfg.Snapshot.SHA256},
		snapshot: cfg.Snapshot, compactor: r}
	if err := r.NeedJournal("compact"); err != nil {
		return nil, err
	}
	s, info, err := r.checkCompact(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p.stream = s
	prev, had, err := horizonOf(info.Config, hd.Table)
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if had {
		p.Previous = prev.Seq
		if prev.Seq > hd.Seq {
			return nil, fmt.Errorf("compact: %w: %s's horizon is already at %d (snapshot %s), after this snapshot's %d",
				ErrNoSnapshotAtHorizon, hd.Table, prev.Seq, prev.Snapshot, hd.Seq)
		}
	}
	if hd.Seq > 1 {
		err = r.Journal().ReadAny(ctx, 1, hd.Seq-1, wire.TableFilters(hd.Table), func(journal.Msg) error {
			p.Commands++
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("compact: count %s's commands before %d: %w", hd.Table, hd.Seq, err)
		}
	}
	return p, nil
}

// checkCompact checks that the journal allows purges (ErrTrimDenied) and
// that the snapshot is of this journal at a sequence the projector has
// fully applied (ErrNoSnapshotAtHorizon); it returns the journal's stream.
func (r *Compactor) checkCompact(ctx context.Context, cfg CompactConfig) (jetstream.Stream, *jetstream.StreamInfo, error) {
	hd := cfg.Snapshot.Header
	if hd.Table == "" || hd.Seq == 0 || cfg.Snapshot.SHA256 == "" || cfg.Location == "" {
		return nil, nil, fmt.Errorf("compact: %w: give a checked snapshot and its location", ErrNoSnapshotAtHorizon)
	}
	if hd.Journal != "" && hd.Journal != r.Journal().Name() {
		return nil, nil, fmt.Errorf("compact: %w: the snapshot is of journal %s, not %s", ErrNoSnapshotAtHorizon, hd.Journal, r.Journal().Name())
	}
	s, err := r.JetStream().Stream(ctx, r.Journal().Name())
	if err != nil {
		return nil, nil, fmt.Errorf("compact: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("compact: %w", err)
	}
	if info.Config.DenyPurge {
		return nil, nil, fmt.Errorf("compact: %w: journal %s was created without --journal-allow-trim, and JetStream cannot lift deny_purge from a stream; to trim, move the commands to a new journal that allows it (stop the projectors; `replay --stream %s move --new-stream NEWNAME --allow-trim --apply --cutover`), point everything at --stream NEWNAME and compact there, or keep this journal whole",
			ErrTrimDenied, r.Journal().Name(), r.Journal().Name())
	}
	applied, err := r.AppliedSeq(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("compact: %w", err)
	}
	if hd.Seq > applied {
		return nil, nil, fmt.Errorf("compact: %w: the snapshot is at sequence %d, beyond %d, the last the projector has fully applied; its rows may miss commands the journal must keep",
			ErrNoSnapshotAtHorizon, hd.Seq, applied)
	}
	return s, info, nil
}

// recordAndPurge records h in the stream's metadata, purges the table's
// commands before h.Seq, and checks that the horizon is still recorded;
// purged says whether the purge was done.
func (r *Compactor) recordAndPurge(ctx context.Context, s jetstream.Stream, h Horizon) (purged bool, err error) {
	b, _ := json.Marshal(h)
	key := horizonKey(h.Table)
	// The configuration as it is now (the count took a while): JetStream
	// has no conditional update, so two compactions at once could each
	// write the metadata without the other's horizon; the check after the
	// purge catches that.
	info, err := s.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("compact: %w", err)
	}
	sc := info.Config
	sc.Metadata = maps.Clone(sc.Metadata)
	if sc.Metadata == nil {
		sc.Metadata = map[string]string{}
	}
	// One key per table: a key in another case, recorded before the key
	// was lower case, holds a horizon at or before this one (PlanCompact
	// refuses to move a horizon back).
	for _, k := range horizonKeys(sc.Metadata, h.Table) {
		delete(sc.Metadata, k)
	}
	sc.Metadata[key] = string(b)
	if _, err := r.JetStream().UpdateStream(ctx, sc); err != nil {
		return false, fmt.Errorf("compact: record the horizon of %s in journal %s: %w", h.Table, r.Journal().Name(), err)
	}
	for _, filter := range wire.TableFilters(h.Table) {
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(filter), jetstream.WithPurgeSequence(h.Seq)); err != nil {
			return false, fmt.Errorf("compact: the horizon of %s is recorded at %d, but the purge failed (run compact again): %w", h.Table, h.Seq, err)
		}
	}
	if info, err = s.Info(ctx); err != nil {
		return true, fmt.Errorf("compact: check the recorded horizon: %w", err)
	}
	if info.Config.Metadata[key] != string(b) {
		return true, fmt.Errorf("compact: %s's commands before %d are trimmed, but another change of journal %s's configuration replaced the recorded horizon (compactions at once?): run this compact again now to record it",
			h.Table, h.Seq, r.Journal().Name())
	}
	return true, nil
}

// CheckHorizon refuses what the journal, trimmed at table's horizon,
// cannot give: a point to before the horizon (ErrBeforeHorizon), or a
// replay of the journal from a sequence from before it (no snapshot, or an
// older one); from 0 checks only to.
func (r *Compactor) CheckHorizon(ctx context.Context, table string, from, to uint64) error {
	if table == "" {
		return nil
	}
	h, ok, err := r.Horizon(ctx, table)
	if err != nil || !ok {
		return err
	}
	if to < h.Seq {
		return fmt.Errorf("%w: %s's commands before sequence %d are trimmed from the journal; the earliest point is %d, from the snapshot %s (sha256 %s)",
			ErrBeforeHorizon, table, h.Seq, h.Seq, h.Snapshot, shortHash(h.SHA256))
	}
	if from != 0 && from < h.Seq {
		return fmt.Errorf("%w: %s's commands before sequence %d are trimmed from the journal; rebuild from the snapshot %s (--from-snapshot), or one taken at %d or later",
			ErrBeforeHorizon, table, h.Seq, h.Snapshot, h.Seq)
	}
	return nil
}

func shortHash(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// Compacted reports whether the journal's first sequence, first, may be
// explained by compactions alone: some table's horizon is at or after it.
// A compaction purges one table's commands, so the journal's first
// sequence moves without any other table's command being gone; the
// per-table check (CheckHorizon) then stands. A journal purged by hand
// beyond every horizon is still refused by checkNotTrimmed.
func Compacted(cfg jetstream.StreamConfig, first uint64) bool {
	for k, v := range cfg.Metadata {
		if !strings.HasPrefix(k, MetadataHorizonPrefix) {
			continue
		}
		var h Horizon
		if json.Unmarshal([]byte(v), &h) == nil && h.Seq >= first {
			return true
		}
	}
	return false
}
