// Package retention removes what need be kept no longer, through the
// journal: a [Pruner] removes old versions of rows under a policy (SPEC §4),
// as a [PrunePlan]; a [Compactor] trims a table's commands from the journal
// below a stored snapshot of it, its journal horizon (SPEC §3), as a
// [CompactPlan], taking or checking that snapshot first
// ([Compactor.PlanCompactAt]), and opens the snapshot recorded at the
// horizon after checking its SHA-256 ([Compactor.RecordedSnapshot]), for a
// rebuild or verify of a trimmed table. Both plans are replay.Plans: planned
// first, changing nothing, then applied.
package retention

import "github.com/tablejournal/tablejournal/replay"

// Pruner prunes the history of the tables of a replay.Source. It is safe
// for concurrent use.
type Pruner struct{ *replay.Source }

// NewPruner returns a Pruner of src.
func NewPruner(src *replay.Source) *Pruner { return &Pruner{src} }

// Compactor trims the journal of a replay.Source below snapshots, and
// reads the horizons it recorded. It is safe for concurrent use.
type Compactor struct{ *replay.Source }

// NewCompactor returns a Compactor of src.
func NewCompactor(src *replay.Source) *Compactor { return &Compactor{src} }
