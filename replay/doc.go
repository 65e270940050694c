// Package replay is time travel over the projected tables (SPEC §6): read
// any row, partition or table as it stood at a point of the journal, list
// and blame versions, rebuild a table from the journal, undo a command or
// restore a table to a point with ordinary journaled commands, and export
// and load consistent snapshots.
//
// There are only a few types:
//
//   - [Replayer] holds the table store and, optionally, the JetStream
//     connection to the journal and its outcomes. [New] makes one.
//   - [Point] names a position of the journal: a sequence, a time, a
//     command ID, or the head. [Replayer.Resolve] turns it into a sequence.
//   - Reads: [Replayer.AsOfRow] (at most three store requests whatever the
//     row's history depth), [Replayer.AsOf] (one range scan for a partition
//     or a table), [Replayer.History], [Diff] and [Replayer.Blame]. They
//     read version rows only, never replay the journal: the state of a row
//     at sequence S is its newest version with _seq <= S, absent if none or
//     if that one is a tombstone.
//   - [Plan] is an undo ([Replayer.PlanUndo]) or a restore
//     ([Replayer.PlanRestore]): per row the operation back to the target
//     version, guarded by the row's current version. [Replayer.Apply]
//     publishes its commands through the journal Writer with deterministic
//     IDs and waits for their outcomes.
//   - [Replayer.Rebuild] re-projects the journal into a fresh table through
//     projection.Applier; [Replayer.Snapshot] and [Replayer.Load] export and
//     import a table consistent at a sequence ([Header], format.go).
//
// Errors are checked with errors.Is against the sentinels in errors.go.
package replay
