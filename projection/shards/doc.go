// Package shards shares a journal's shards among identical projector
// instances (SPEC §5): in steady state every shard is applied by exactly
// one instance and the instances' counts differ by at most one; a new
// instance gets its share by handoff, a stopping one releases its shards at
// once, and the shards of one that died are taken over when its leases
// expire.
//
// It is built on a JetStream key-value bucket (Bucket, "TABLEJOURNAL_OWNERS"
// for the default journal and consumers) with per-key TTLs:
//
//   - shard.<n> holds the shard's lease, a JSON [Lease] {"owner", "since",
//     ...}. It is created with a TTL, renewed by its owner with a
//     compare-and-set on its revision, and released by a delete that names
//     the revision. Nobody else ever writes a lease that exists: an instance
//     claims only a shard whose key is absent (never written, released, or
//     expired), with Create. The revision at which the owner claimed is the
//     lease's epoch, its fencing token.
//   - instance.<id> holds a [Member] and is rewritten with a TTL by its
//     instance every tick: the live instances, which the balancing counts.
//
// The bucket keeps markers where keys expire, so every instance's watcher
// sees a dead owner's leases go. Every instance runs the same rule on its
// view (see [Group.Run]); compare-and-set settles races.
//
// An owner that cannot renew a lease stops applying the shard before the
// lease can expire (the lease is "fenced" locally), so in a healthy cluster
// two instances never apply one shard at once. Moments of overlap (a process
// paused longer than the TTL) are the table fencing's to make harmless.
package shards
