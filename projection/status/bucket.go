package status

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the JetStream key-value bucket where running projectors
// report each shard they apply (key Key, value a [ShardReport]),
// rewritten every few seconds. Its entries expire after TTL, so a
// dead instance's reports go away by themselves.
const Bucket = "TABLEJOURNAL_STATUS"

// TTL is how long a shard report lives without being rewritten.
const TTL = 30 * time.Second

// ShardReport is what an instance reports of one shard it applies.
type ShardReport struct {
	Instance   string    `json:"instance"`
	Applied    uint64    `json:"applied"`
	Pending    uint64    `json:"pending"`
	LagSeconds float64   `json:"lagSeconds"`
	Rate       float64   `json:"rate"` // commands per second over the last minute
	At         time.Time `json:"at"`
	// PrunedRows is the instance's count of rows removed by prune
	// commands since it started, over all its shards (projection.Stats).
	PrunedRows int64 `json:"prunedRows,omitempty"`
}

// Key is the key of a shard's report for the consumers named
// durable on journal stream.
func Key(stream, durable string, shard int) string {
	return stream + "." + durable + ".shard." + strconv.Itoa(shard)
}

// EnsureBucket creates the status bucket if it does not exist and
// returns it.
func EnsureBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("status bucket: %w", err)
	}
	kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: Bucket, Description: "tablejournal projector shard reports",
		TTL: TTL, History: 1, Storage: jetstream.MemoryStorage, Replicas: max(replicas, 1),
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("status bucket: %w", err)
	}
	return kv, nil
}
