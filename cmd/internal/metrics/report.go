package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/tablejournal/tablejournal/wire"
)

// ReportConfig configures Report.
type ReportConfig struct {
	// Summary is how often a one-line summary is logged while there is
	// work (commands handled or pending). If zero, 30 seconds.
	Summary time.Duration
}

// Report logs, until ctx ends, a summary (rate, outcomes, lag) every
// cfg.Summary while there is work, and nothing while idle. (The projector
// itself warns, with the reason, while the store fails or throttles.)
func (m *Metrics) Report(ctx context.Context, log *slog.Logger, cfg ReportConfig) {
	if cfg.Summary == 0 {
		cfg.Summary = 30 * time.Second
	}
	t := time.NewTicker(cfg.Summary)
	defer t.Stop()
	last := m.Snapshot()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		snap := m.Snapshot()
		if d, ok := summary(last, snap); ok {
			log.Info("projecting", d...)
		}
		last = snap
	}
}

// summary returns the attributes of the summary line from prev to cur,
// and false when there was no work.
func summary(prev, cur Snapshot) ([]any, bool) {
	diff := func(s wire.Status) uint64 { return cur.Commands[s] - prev.Commands[s] }
	handled := diff(wire.StatusApplied) + diff(wire.StatusRejected) + diff(wire.StatusDuplicate)
	pending := cur.Pending()
	if handled == 0 && pending == 0 {
		return nil, false
	}
	secs := cur.At.Sub(prev.At).Seconds()
	return []any{
		"rate", int64(float64(handled) / secs),
		"applied", diff(wire.StatusApplied), "rejected", diff(wire.StatusRejected), "duplicate", diff(wire.StatusDuplicate),
		"lag_messages", pending, "lag_seconds", int64(cur.MaxLagSeconds()), "shards", len(cur.Shards),
	}, true
}
