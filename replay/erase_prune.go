package replay

import (
	"slices"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/rows"
)

// A prune and an erase in the same partition (SPEC §10): the erase keeps
// the partition's prune horizon on the fence, and the prune commands in
// the journal, so that a rebuild reproduces the horizon.

// keptPrune reports whether a journaled command is a prune, which an
// erase leaves in the journal: it names the partition and a horizon and
// holds no property value, and a rebuild needs it for the fence's horizon.
func keptPrune(cmd *events.Command) bool { return cmd != nil && cmd.Prune != nil }

// fenceDiff is Diff of two fences, want the rebuilt one and got the live
// one, but for the count of rows a prune removed when either fence
// records an erase: the erase took rows out of the journal that the live
// prune had removed, so a rebuild counts fewer, and the count is the
// prune's receipt, not state.
func fenceDiff(want, got events.Entity) []PropChange {
	cols := Diff(want, got)
	_, erasedW := want[rows.ColEraseSeq]
	_, erasedG := got[rows.ColEraseSeq]
	if !erasedW && !erasedG {
		return cols
	}
	return slices.DeleteFunc(cols, func(c PropChange) bool { return c.Name == rows.ColPruneRemoved })
}
