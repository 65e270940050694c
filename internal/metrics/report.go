package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/tablejournal/tablejournal/projection"
)

// ReportConfig configures Report.
type ReportConfig struct {
	// Summary is how often a one-line summary is logged while there is
	// work (commands handled or pending). If zero, 30 seconds.
	Summary time.Duration
	// Check is how often the store's busy answers are looked at; a
	// warning is logged for every interval with some. If zero, 10 seconds.
	Check time.Duration
}

// Report logs, until ctx ends, what an operator wants to see without
// scraping: a summary (rate, outcomes, lag) every cfg.Summary while there
// is work and nothing while idle, and a warning with the store's reason in
// every cfg.Check interval in which the store answered busy, saying how
// long it has answered nothing else (the applier retries meanwhile).
func (m *Metrics) Report(ctx context.Context, log *slog.Logger, cfg ReportConfig) {
	if cfg.Summary == 0 {
		cfg.Summary = 30 * time.Second
	}
	if cfg.Check == 0 {
		cfg.Check = 10 * time.Second
	}
	t := time.NewTicker(min(cfg.Check, cfg.Summary))
	defer t.Stop()
	last := m.Snapshot()
	lastBusy := last.Store.Busy
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		snap := m.Snapshot()
		if n := snap.Store.Busy - lastBusy; n > 0 {
			attrs := []any{"busy_answers", n, "op", snap.Store.LastBusyOp, "reason", snap.Store.LastBusy}
			if !snap.Store.BusySince.IsZero() {
				attrs = append(attrs, "busy_for", snap.At.Sub(snap.Store.BusySince).Round(time.Second))
			}
			log.Warn("the table store is throttling; retrying", attrs...)
		}
		lastBusy = snap.Store.Busy
		if snap.At.Sub(last.At) < cfg.Summary {
			continue
		}
		if d, ok := summary(last, snap); ok {
			log.Info("projecting", d...)
		}
		last = snap
	}
}

// summary returns the attributes of the summary line from prev to cur,
// and false when there was no work.
func summary(prev, cur Snapshot) ([]any, bool) {
	diff := func(s projection.Status) uint64 { return cur.Commands[s] - prev.Commands[s] }
	handled := diff(projection.Applied) + diff(projection.Rejected) + diff(projection.Duplicate)
	pending := cur.Pending()
	if handled == 0 && pending == 0 {
		return nil, false
	}
	secs := cur.At.Sub(prev.At).Seconds()
	return []any{
		"rate", int64(float64(handled) / secs),
		"applied", diff(projection.Applied), "rejected", diff(projection.Rejected), "duplicate", diff(projection.Duplicate),
		"lag_messages", pending, "lag_seconds", int64(cur.MaxLagSeconds()), "shards", len(cur.Shards),
	}, true
}
