// Package journal is the durable, ordered, deduplicated log of commands
// (SPEC §3): one JetStream stream that services publish into and that the
// projector consumes.
//
// There are only a few types:
//
//   - [Journal] is the stream. [Ensure] creates or checks it, [Open] opens an
//     existing one. A client publishes a command to
//     journal.<table-token>.<pk-token> ([wire.JournalSubject]; the token is
//     the table in lower case, [wire.TableToken]); the stream's own subject
//     transform stores it under journal.<table-token>.<shard>.<pk-token>, where the shard is the server's
//     deterministic partition() of table and partition key, so one
//     partition's commands stay in one shard, in order. The shard count is
//     fixed at creation and recorded in the stream's metadata.
//   - [Writer] validates, encodes and publishes commands, waits for the
//     JetStream acknowledgement, and retries transient failures with the
//     same Nats-Msg-Id, so a retry never becomes a second command.
//   - [Msg] is one stored message; [Journal.Get], [Journal.Read],
//     [Journal.SeqAtTime] and [Journal.Head] name and read positions, and
//     [DecodeMsg] turns a Msg back into a checked command.
//   - [wire.Outcome] is what became of a command (applied, rejected,
//     duplicate); package journal/outcomes creates and reads the OUTCOMES
//     stream that holds them, and a writer waits for one there.
//   - [AppliedThrough] is how far a projector has applied a shard: its
//     consumer's acknowledged floor, the one place every reader of "applied
//     through sequence S" (read-your-writes, replay, status, the move of a
//     journal) takes it from.
//
// The names of streams and subjects, and the Outcome type, are the wire
// contract, in package wire; this package creates and reads the streams.
//   - [Server] is an embedded, loopback-only nats-server with JetStream,
//     used when no NATS URL is configured and in tests.
//
// Errors are checked with errors.Is against the sentinels in errors.go.
package journal
