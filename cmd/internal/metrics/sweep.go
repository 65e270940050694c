package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tablejournal/tablejournal/projection"
)

// NameSweepAge is how old each shard's last complete anti-entropy sweep is
// (issue 36; projection.Stats.Sweeps): every partition of the shard
// checked against the journal, the check at the shard's start counting as
// one. Not in SPEC §9.
const NameSweepAge = "tablejournal_projector_sweep_age_seconds"

var descSweepAge = prometheus.NewDesc(NameSweepAge,
	"Seconds since the last complete sweep of the shard's partitions for writes the store lost (or since the shard started here, when none completed yet); absent with --sweep-interval 0.",
	[]string{"shard"}, nil)

// collectSweeps exports the sweep age of every shard of s (nil: none yet)
// at now.
func collectSweeps(ch chan<- prometheus.Metric, s *projection.Stats, now time.Time) {
	if s == nil {
		return
	}
	for shard, at := range s.Sweeps.Completed() {
		ch <- prometheus.MustNewConstMetric(descSweepAge, prometheus.GaugeValue, max(now.Sub(at).Seconds(), 0), strconv.Itoa(shard))
	}
}
