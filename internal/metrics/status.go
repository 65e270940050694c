package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
)

// StatusConfig configures PublishStatus.
type StatusConfig struct {
	// Instance names this projector instance in the reports.
	Instance string
	// Journal is the journal stream's name. If zero, journal.DefaultStream.
	Journal string
	// Durable is the projector's consumer name prefix. If zero,
	// "projector".
	Durable string
	// Every is how often the reports are rewritten. If zero, 5 seconds;
	// it must stay well under projection.StatusTTL.
	Every time.Duration
	// Replicas of the status bucket when it is created. If zero, 1.
	Replicas int
}

// PublishStatus writes, until ctx ends, a projection.ShardReport for every
// shard this instance runs to the status bucket, every cfg.Every, and
// deletes its reports when ctx ends or a shard stops here. Failures to
// write are retried at the next tick; only failing to open the bucket is
// returned.
func (m *Metrics) PublishStatus(ctx context.Context, js jetstream.JetStream, cfg StatusConfig) error {
	if cfg.Durable == "" {
		cfg.Durable = "projector"
	}
	if cfg.Journal == "" {
		cfg.Journal = journal.DefaultStream
	}
	if cfg.Every == 0 {
		cfg.Every = 5 * time.Second
	}
	kv, err := projection.EnsureStatusBucket(ctx, js, cfg.Replicas)
	if err != nil {
		return err
	}
	hist := make(map[int][]sample)
	mine := make(map[int]uint64) // shard → revision of our report
	// The first reports go out a second after the start, when the shards
	// have opened their consumers; then every cfg.Every.
	t := time.NewTimer(min(time.Second, cfg.Every))
	defer t.Stop()
	for {
		snap := m.Snapshot()
		running := make(map[int]bool, len(snap.Shards))
		for _, s := range snap.Shards {
			running[s.Shard] = true
			hist[s.Shard] = addSample(hist[s.Shard], sample{snap.At, s.Handled})
			rep := projection.ShardReport{Instance: cfg.Instance, Applied: s.Applied, Pending: s.Pending,
				LagSeconds: s.LagSeconds, Rate: rate(hist[s.Shard]), At: snap.At.UTC()}
			data, err := json.Marshal(rep)
			if err != nil {
				return fmt.Errorf("status report: %w", err)
			}
			if rev, err := kv.Put(ctx, projection.StatusKey(cfg.Journal, cfg.Durable, s.Shard), data); err == nil {
				mine[s.Shard] = rev
			}
		}
		for shard, rev := range mine {
			if !running[shard] {
				deleteReport(ctx, kv, projection.StatusKey(cfg.Journal, cfg.Durable, shard), rev)
				delete(mine, shard)
				delete(hist, shard)
			}
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			for shard, rev := range mine {
				deleteReport(dctx, kv, projection.StatusKey(cfg.Journal, cfg.Durable, shard), rev)
			}
			cancel()
			return nil
		case <-t.C:
			t.Reset(cfg.Every)
		}
	}
}

// deleteReport deletes a report this instance wrote, unless another
// instance wrote one since. A failure is left to the bucket's TTL.
func deleteReport(ctx context.Context, kv jetstream.KeyValue, key string, rev uint64) {
	_ = kv.Delete(ctx, key, jetstream.LastRevision(rev))
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
