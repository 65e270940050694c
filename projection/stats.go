package projection

import "sync/atomic"

// Stats counts what an operator wants to see of the projector's safety
// machinery. The counters only grow; they are safe for concurrent use and
// meant to be read by a metrics exporter (Projector.Stats).
type Stats struct {
	// Disagreements counts the times the table disagreed with what the
	// projector wrote: a partition's fence went back (the store lost
	// confirmed writes), a row was not as the fence said it must be, or a
	// redelivered command whose rows moved on has neither an outcome nor a
	// version. Each is also logged at ERROR. A store that keeps its writes
	// never causes one.
	Disagreements atomic.Int64
	// FenceConflicts counts transactions refused because another writer
	// committed to the partition first (two instances on one shard for a
	// moment); the batch is reloaded and re-decided.
	FenceConflicts atomic.Int64
	// StoreRetries counts store calls retried after a transient error.
	StoreRetries atomic.Int64
	// LostDeliveries counts the times a shard's consumer was recreated
	// because deliveries were lost (a gap, or messages delivered that
	// never arrived).
	LostDeliveries atomic.Int64
	// OutcomeLookups counts the batched look-ups of earlier outcomes of
	// the command IDs of fetched batches (one per fetch).
	OutcomeLookups atomic.Int64
	// FirstSeen counts the commands decided without that look-up: the
	// first-seen filter knew no earlier journal message carried their ID
	// (ids.go).
	FirstSeen atomic.Int64
	// DuplicatesByID counts commands reported duplicate because their ID
	// was applied before at another journal sequence.
	DuplicatesByID atomic.Int64
	// PrunedRows counts the version and tombstone rows removed by prune
	// commands (prune.go).
	PrunedRows atomic.Int64
	// Behind lists the partitions found behind what the projector
	// applied: the store lost confirmed writes (behind.go).
	Behind Behind
	// Held lists the partitions held by a row the projector did not
	// write (held.go).
	Held Held
	// Sweeps says when each shard's last complete anti-entropy sweep
	// ended (sweep.go).
	Sweeps Sweeps
}
