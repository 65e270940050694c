// Package projection applies journal commands to tables with in-place
// versioning (SPEC §4, §5): each logical row is a tip row plus version and
// tombstone rows in the same partition, written in one transaction and
// tagged with the command ID and journal sequence that produced them.
//
// The files follow the cut between deciding and doing:
//
//   - layout.go is the row layout: RowKeys, system columns, [Row].
//   - apply.go is the pure versioned apply of a batch of one partition's
//     commands: results and store operations, no clock, no I/O.
//   - applier.go is the [Applier]: it loads row state (through the bounded
//     row cache of cache.go), runs the pure batch, commits it with retries,
//     and calls [Hooks] where outcomes must be published. The projector and
//     replay's rebuild both use it.
//   - projector.go is the [Projector]: one durable JetStream consumer per
//     shard, partitions in parallel, each in journal order, with
//     exactly-once effect; changefeed.go publishes outcomes and the change
//     feed before messages are acknowledged.
//   - read.go is the [Reader] over the layout.
//
// docs/ARCHITECTURE.md explains the exactly-once argument.
package projection
