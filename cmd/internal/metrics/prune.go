package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tablejournal/tablejournal/projection"
)

// NamePrunedRows counts the version and tombstone rows removed by prune
// commands (issue 19; projection.Stats.PrunedRows). Not in SPEC §9.
const NamePrunedRows = "tablejournal_projector_pruned_rows_total"

var descPruned = prometheus.NewDesc(NamePrunedRows, "Version and tombstone rows removed by prune commands (version retention).", nil, nil)

// collectPruned exports the pruned-rows counter of s (nil: none yet).
func collectPruned(ch chan<- prometheus.Metric, s *projection.Stats) {
	var n int64
	if s != nil {
		n = s.PrunedRows.Load()
	}
	ch <- prometheus.MustNewConstMetric(descPruned, prometheus.CounterValue, float64(n))
}

// prunedRows is the pruned-rows counter of the projector's Stats, 0
// before SetStats.
func (m *Metrics) prunedRows() int64 {
	if s := m.stats.Load(); s != nil {
		return s.PrunedRows.Load()
	}
	return 0
}
