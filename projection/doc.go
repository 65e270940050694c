// Package projection applies journal commands to tables with in-place
// versioning (SPEC §4, §5): each logical row is a tip row plus version and
// tombstone rows in the same partition, written in one transaction and
// tagged with the command ID and journal sequence that produced them. The
// layout itself and its readers are package rows.
//
// The files follow the cut between deciding and doing:
//
//   - package [github.com/tablejournal/tablejournal/projection/decide] is
//     the pure versioned apply of one transaction of a partition's
//     commands: entries, results, the fence's content and the store
//     operations, no clock, no I/O. [Entry], [Result] and the rest are its
//     types under the names this package has always given them.
//   - the partition driver, [Applier.Apply], the one driver of the
//     exactly-once path: for each transaction of a partition it decides on
//     the rows as the table holds them and commits with retries. apply.go
//     is the loop and the kinds of transaction (txKind: rows, reject-only;
//     the erase and the prune of erase.go and prune.go); run.go one
//     partition's run; fenced.go the partition's fence and rows with the
//     bounded row cache they are kept in (cache.go), the one place either
//     is read or changed; layout.go how rows are stored (rowLayout, one
//     implementation today); applier.go what the [Applier] shares across
//     partitions. The projector and replay's rebuild both call Apply; what
//     they add around each transaction are its [Hooks], which return what
//     they settle.
//   - projector.go is the [Projector] and its shards: one durable JetStream
//     consumer per shard, each fetched batch handed over in delivery order.
//   - held.go is what a shard does with a partition held by a row the
//     projector did not write (HeldError): keeps its messages, acknowledges
//     below them, tries them again.
//   - batch.go takes one fetched batch through the exactly-once order, top
//     to bottom; ready.go is where each partition waits for the batch's
//     outcome look-up; recover.go is its crash-recovery stage with the
//     reads it makes, and publish.go every publishing step, the messages and the
//     two publishers, of outcomes and of change events (changefeed.go
//     creates the change feed's stream).
//   - behind.go finds and records partitions the store lost confirmed
//     writes of; sweep.go walks a shard's partitions for them, paced by
//     sweepPace (sweeppace.go, pure: what to check next and when).
//
// docs/ARCHITECTURE.md ("Exactly once") explains the order and what proves
// each stage.
package projection
