// Package move moves a journal's commands into a new JetStream stream, for
// what JetStream cannot change on a stream in place: turning deny-delete or
// deny-purge off (erasure on a deny-delete journal, compaction on a journal
// that denies purges; docs/replay.md "Moving a journal").
//
// The copy is a JetStream mirror of the journal, so every message keeps its
// sequence, stored subject (journal.<table>.<shard>.<pk-token>), headers
// (Nats-Msg-Id among them), body and stored time, and a deleted or trimmed
// sequence stays a gap: the tables, outcomes and change events, which name
// journal sequences and the stored times (_at), stay valid without a
// rebuild. The server keeps the mirror going, so a move stopped half way
// and run again continues where the copy is. The cutover freezes the old
// stream (it stops taking the journal's subjects), waits for the copy,
// verifies both sides (counts, first and last sequence, a digest of every
// message), and turns the copy into the journal: the old stream's subjects,
// subject transform, shard count and metadata, the deny flags asked for,
// and the projector's consumers at their acknowledged floors.
//
// [Run] does it; [Config] says what; [Report] is what it found and did.
// Errors are checked with errors.Is against the sentinels in errors.go.
package move
