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

// NameHeldPartitions is the number of partitions the projector holds
// because a row it did not write stands in the way (SPEC §5, "A held
// partition"; projection.Stats.Held). Not in SPEC §9.
const NameHeldPartitions = "tablejournal_held_partitions"

var descHeld = prometheus.NewDesc(NameHeldPartitions,
	"Partitions held by a row the projector did not write (each logged at ERROR): their commands wait; deal with the row, then projector resume.", nil, nil)

// collectHeld exports the held partitions of s (nil: none yet).
func collectHeld(ch chan<- prometheus.Metric, s *projection.Stats) {
	var n int
	if s != nil {
		n = s.Held.Len()
	}
	ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(n))
}
