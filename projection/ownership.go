package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/projection/shards"
)

// OwnersBucket is the JetStream key-value bucket in which projector
// instances share the shards of the default journal (keys shard.<n>, JSON
// shards.Lease values {"owner", "since", ...}; see package shards). A
// projector with another journal stream or Durable uses
// OwnersBucketFor(stream, durable).
const OwnersBucket = shards.DefaultBucket

// OwnersBucketFor returns the ownership bucket of the projectors with
// consumers durable on journal stream.
func OwnersBucketFor(stream, durable string) string { return shards.BucketFor(stream, durable) }

// Consumer metadata keys: the instance that created a shard's consumer and
// the epoch of its lease.
const (
	MetadataOwner = "tablejournal.owner"
	MetadataEpoch = "tablejournal.epoch"
)

// OwnedShards returns the shards this projector applies now, in order: its
// Config.Shards when they were given, else the shards whose leases it
// holds.
func (p *Projector) OwnedShards() []int {
	if p.group == nil {
		return slices.Clone(p.cfg.Shards)
	}
	return p.group.Owned()
}

// InstanceID returns the ID under which this projector holds leases; empty
// with static Config.Shards.
func (p *Projector) InstanceID() string {
	if p.group == nil {
		return ""
	}
	return p.group.ID()
}

// runOwnedShard applies a shard whose lease this instance just took. While
// it did not own the shard another instance may have written the shard's
// rows, so every cached row state is forgotten first: the cache holds rows
// of many partitions and does not know their shards, and acquisitions are
// rare (membership changes), so all of it goes.
func (p *Projector) runOwnedShard(ctx context.Context, shard int) error {
	p.applier.cache.clear()
	p.applier.mirrors.clear()
	return p.observedShard(ctx, shard)
}

// ErrDrainTimeout is the cause a batch in flight is abandoned with when it
// did not finish within Config.DrainTimeout of its shard's end.
var ErrDrainTimeout = errors.New("batch not finished within the drain timeout")

// drainContext is the context a shard finishes its in-flight batch with
// once ctx is cancelled: it outlives ctx (a handoff or a shutdown finishes
// the batch) by at most timeout (no bound if timeout <= 0), and not at all
// if the lease was lost. An abandoned batch is left as if the process had
// crashed (the next owner redoes it), so that an ex-owner stops writing as
// soon as it knows, and a stopping projector stops even when the store or
// JetStream does not answer. Call done when the batch is over.
func drainContext(ctx context.Context, timeout time.Duration) (drain context.Context, done func()) {
	drain, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); errors.Is(cause, shards.ErrNotOwner) {
			cancel(cause)
			return
		}
		if timeout > 0 {
			timer := time.AfterFunc(timeout, func() { cancel(ErrDrainTimeout) })
			context.AfterFunc(drain, func() { timer.Stop() })
		}
	})
	return drain, func() { stop(); cancel(nil) }
}

// joinOwners joins the ownership group when no static shards were given.
func (p *Projector) joinOwners(ctx context.Context, replicas int) error {
	g, err := shards.Join(ctx, p.js, shards.Config{
		Bucket:     OwnersBucketFor(p.j.Name(), p.cfg.Durable),
		Shards:     p.j.Shards(),
		InstanceID: p.cfg.InstanceID,
		LeaseTTL:   p.cfg.LeaseTTL,
		Replicas:   replicas,
		Logger:     p.log,
	})
	if err != nil {
		return err
	}
	p.group = g
	return nil
}

// ownerMetadata confirms this instance's lease on shard and returns the
// metadata its consumer is created with. A consumer's delete and re-create
// is what only the shard's owner may do: the lease is renewed right before
// (it cannot pass to another instance for a lease TTL after), and a
// consumer made by a later owner (a higher epoch) is never deleted. With
// static shards there is no lease and no check.
func (p *Projector) ownerMetadata(ctx context.Context, shard int, existing *jetstream.ConsumerInfo) (map[string]string, error) {
	if p.group == nil {
		return nil, nil
	}
	epoch, err := p.group.Confirm(ctx, shard)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if other, _ := strconv.ParseUint(existing.Config.Metadata[MetadataEpoch], 10, 64); other > epoch {
			return nil, fmt.Errorf("%w: consumer %s belongs to lease epoch %d of %s, this instance's is %d",
				shards.ErrNotOwner, existing.Name, other, existing.Config.Metadata[MetadataOwner], epoch)
		}
	}
	return map[string]string{MetadataOwner: p.group.ID(), MetadataEpoch: strconv.FormatUint(epoch, 10)}, nil
}
