package metrics

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/projection/status"
)

// StatusConfig configures PublishStatus.
type StatusConfig struct {
	// Instance names this projector instance in the reports.
	Instance string
	// Journal, Durable, Every and Replicas are as in status.PublishConfig.
	Journal, Durable string
	Every            time.Duration
	Replicas         int
}

// PublishStatus writes, until ctx ends, a status.ShardReport for every
// shard this instance runs to the status bucket (status.Publish), with
// the rate of the last minute.
func (m *Metrics) PublishStatus(ctx context.Context, js jetstream.JetStream, cfg StatusConfig) error {
	hist := make(map[int][]sample)
	pcfg := status.PublishConfig{Journal: cfg.Journal, Durable: cfg.Durable, Every: cfg.Every, Replicas: cfg.Replicas}
	return status.Publish(ctx, js, pcfg, func() map[int]status.ShardReport {
		snap := m.Snapshot()
		reps := make(map[int]status.ShardReport, len(snap.Shards))
		for _, s := range snap.Shards {
			hist[s.Shard] = addSample(hist[s.Shard], sample{snap.At, s.Handled})
			reps[s.Shard] = status.ShardReport{Instance: cfg.Instance, Applied: s.Applied, Pending: s.Pending,
				LagSeconds: s.LagSeconds, Rate: rate(hist[s.Shard]), At: snap.At.UTC(), PrunedRows: m.prunedRows()}
		}
		for shard := range hist {
			if _, ok := reps[shard]; !ok {
				delete(hist, shard)
			}
		}
		return reps
	})
}

// sample is a shard's count of applied messages at one moment.
type sample struct {
	at      time.Time
	handled uint64
}

// rateWindow is the span of the reported rate.
const rateWindow = time.Minute

// addSample appends s and keeps the samples of the last rateWindow (and
// the one just before it, so the window is covered). A count that went
// down (the shard restarted here) starts over.
func addSample(h []sample, s sample) []sample {
	if len(h) > 0 && s.handled < h[len(h)-1].handled {
		h = h[:0]
	}
	h = append(h, s)
	i := 0
	for i+1 < len(h) && s.at.Sub(h[i+1].at) >= rateWindow {
		i++
	}
	return h[i:]
}

// rate is the applied messages per second over the samples.
func rate(h []sample) float64 {
	if len(h) < 2 {
		return 0
	}
	first, last := h[0], h[len(h)-1]
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(last.handled-first.handled) / secs
}
