package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tablejournal/tablejournal/projection"
)

// NameStoreBehind is the number of partitions the projector found behind
// what it applied: the store lost confirmed writes (issue 28;
// projection.Stats.Behind). Not in SPEC §9.
const NameStoreBehind = "tablejournal_store_behind_partitions"

var descBehind = prometheus.NewDesc(NameStoreBehind,
	"Partitions whose table lacks writes the projector applied and the store confirmed (each logged at ERROR); rebuild them from the journal.", nil, nil)

// collectBehind exports the behind partitions of s (nil: none yet).
func collectBehind(ch chan<- prometheus.Metric, s *projection.Stats) {
	var n int
	if s != nil {
		n = s.Behind.Len()
	}
	ch <- prometheus.MustNewConstMetric(descBehind, prometheus.GaugeValue, float64(n))
}
