// Package outcomes reads and creates the OUTCOMES stream (SPEC §5): what
// became of each command the projector took from the journal (a
// [wire.Outcome]: applied, rejected or duplicate), stored by command ID,
// one per journal message that carried the ID.
//
// There are few names:
//
//   - [Ensure] and [EnsureConfig] create the stream or bring an existing one
//     to its configuration ([Config]: how long outcomes are kept);
//   - [Message] renders an outcome as the message the stream stores, for
//     the projector, which publishes it;
//   - a [Reader] looks outcomes up (Latest, LatestAll, History, Every),
//     waits for the outcome of one publish ([Reader.Await], [Reader.AwaitAll])
//     or follows the stream; a [Watch], started before the publish, waits
//     for one ID's outcome without a JetStream consumer.
//
// Reading outcomes needs no table credentials: a writer waits for its
// commands' outcomes through NATS alone. The names of the stream and its
// subjects, and the Outcome type, are the wire contract, in package wire.
// Errors wrap journal.ErrNotFound when an ID has no outcome yet.
package outcomes
