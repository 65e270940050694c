// Package replay is time travel over the projected tables (SPEC §6). This
// package holds only what its parts share; each concept is a sub-package:
//
//   - replay/history reads the past: a row, partition or table as it
//     stood at a point (as-of), a row's versions, what a command did
//     (blame), and what was erased.
//   - replay/repair writes corrections back through the journal: undo a
//     command, restore a table to a point.
//   - replay/rebuild re-projects the journal into a fresh table, verifies
//     a live table against its journal, and diffs two tables.
//   - replay/snapshot is the snapshot file format and its locations (files,
//     blobs): export a table consistent at a sequence, load it back.
//   - replay/retention removes what is kept no longer: prune old versions,
//     and trim a table's journal below a snapshot (its journal horizon).
//   - replay/erasure erases a row or partition everywhere, with a receipt.
//
// Here: [Source] (the table store, and optionally the journal and its
// outcomes, made by [New]) that every part takes; [Point], a position of the
// journal, which [Source.Resolve] turns into a sequence; [Source.AppliedSeq],
// the sequence the projector has fully applied; [Plan], the one shape of
// every change replay makes (plan.go: an undo, a restore, a prune, a
// compaction, an erase), previewed and then applied, its Apply refusing a
// plan made stale by a change since with [ErrStale]; and the errors every
// part may return, checked with errors.Is (errors.go).
package replay
