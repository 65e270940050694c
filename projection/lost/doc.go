// Package lost is the durable record of partitions a projection found
// behind what it applied: the store lost writes it had confirmed (Azurite
// killed before it flushed, an account restored from a backup). Once the
// projector writes past such a loss the partition's fence no longer shows
// it, so what was found is kept in a JetStream key-value bucket per journal
// and consumer prefix (wire.BehindBucket), one key per partition
// (wire.BehindKey) holding a wire.BehindPartition. The projector writes an
// entry when it finds a partition and mirrors the bucket into its counters
// (projection.Stats.Behind); projector status lists it without a running
// projector; a rebuild of the partition from the journal removes it.
package lost
