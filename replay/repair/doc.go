// Package repair writes corrections back through the journal: the undo of a
// command ([Planner.PlanUndo]) or the restore of a table or partition to a
// point ([Planner.PlanRestore]) is a [Plan] of ordinary commands, each
// guarded by its row's current version; [Plan.Apply], after checking that
// the plan is still the one the tables call for, publishes them with
// deterministic IDs and waits for their outcomes. A Plan is a
// replay.Plan, as the console and the replay command drive it.
package repair

import "github.com/tablejournal/tablejournal/replay"

// Planner plans and applies undo and restore over a replay.Source, which
// needs the journal. It is safe for concurrent use.
type Planner struct{ *replay.Source }

// New returns a Planner of src.
func New(src *replay.Source) *Planner { return &Planner{src} }
