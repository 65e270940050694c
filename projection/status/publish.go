package status

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/wire"
)

// PublishConfig configures Publish.
type PublishConfig struct {
	// Journal is the journal stream's name. If zero, wire.JournalStream.
	Journal string
	// Durable is the projector's consumer name prefix. If zero,
	// wire.DefaultDurable.
	Durable string
	// Every is how often the reports are rewritten. If zero, 5 seconds;
	// it must stay well under TTL.
	Every time.Duration
	// Replicas of the status bucket when it is created. If zero, 1.
	Replicas int
}

// Publish writes, until ctx ends, the report of every shard this instance
// runs, as reports returns them (by shard), to the status bucket, every
// cfg.Every, and deletes its reports when ctx ends or a shard stops here.
// Failures to write are retried at the next tick; only failing to open the
// bucket is returned.
func Publish(ctx context.Context, js jetstream.JetStream, cfg PublishConfig, reports func() map[int]ShardReport) error {
	if cfg.Durable == "" {
		cfg.Durable = wire.DefaultDurable
	}
	if cfg.Journal == "" {
		cfg.Journal = wire.JournalStream
	}
	if cfg.Every == 0 {
		cfg.Every = 5 * time.Second
	}
	kv, err := EnsureBucket(ctx, js, cfg.Replicas)
	if err != nil {
		return err
	}
	key := func(shard int) string { return Key(cfg.Journal, cfg.Durable, shard) }
	mine := make(map[int]uint64) // shard → revision of our report
	// The first reports go out a second after the start, when the shards
	// have opened their consumers; then every cfg.Every.
	t := time.NewTimer(min(time.Second, cfg.Every))
	defer t.Stop()
	for {
		reps := reports()
		for shard, rep := range reps {
			data, err := json.Marshal(rep)
			if err != nil {
				return fmt.Errorf("status report: %w", err)
			}
			if rev, err := kv.Put(ctx, key(shard), data); err == nil {
				mine[shard] = rev
			}
		}
		for shard, rev := range mine {
			if _, ok := reps[shard]; !ok {
				deleteReport(ctx, kv, key(shard), rev)
				delete(mine, shard)
			}
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			for shard, rev := range mine {
				deleteReport(dctx, kv, key(shard), rev)
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
