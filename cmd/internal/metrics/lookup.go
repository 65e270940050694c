package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tablejournal/tablejournal/projection"
)

// NameOutcomeLookups counts the batched look-ups of earlier outcomes of
// fetched command IDs, and NameFirstSeen the commands decided without one
// because no earlier journal message carried their ID (SPEC §5, "A
// command ID seen for the first time"). Not in SPEC §9.
const (
	NameOutcomeLookups = "tablejournal_projector_outcome_lookups_total"
	NameFirstSeen      = "tablejournal_projector_first_seen_ids_total"
)

var (
	descOutcomeLookups = prometheus.NewDesc(NameOutcomeLookups, "Batched look-ups of the earlier outcomes of fetched command IDs.", nil, nil)
	descFirstSeen      = prometheus.NewDesc(NameFirstSeen, "Commands decided without a look-up of earlier outcomes: no earlier journal message carried their ID.", nil, nil)
)

// collectLookups exports the look-up counters of s (nil: none yet).
func collectLookups(ch chan<- prometheus.Metric, s *projection.Stats) {
	var looked, first int64
	if s != nil {
		looked, first = s.OutcomeLookups.Load(), s.FirstSeen.Load()
	}
	ch <- prometheus.MustNewConstMetric(descOutcomeLookups, prometheus.CounterValue, float64(looked))
	ch <- prometheus.MustNewConstMetric(descFirstSeen, prometheus.CounterValue, float64(first))
}
