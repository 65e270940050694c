package erasure

import "github.com/tablejournal/tablejournal/events"

// A prune and an erase in the same partition (SPEC §10): the erase keeps
// the partition's prune horizon on the fence, and the prune commands in
// the journal, so that a rebuild reproduces the horizon; it sets the
// fence's count of pruned rows to 0, so that the rebuild's count (of rows
// whose commands the erase left) equals it and verify stays exact.

// keptPrune reports whether a journaled command is a prune, which an
// erase leaves in the journal: it names the partition and a horizon and
// holds no property value, and a rebuild needs it for the fence's horizon.
func keptPrune(cmd *events.Command) bool { return cmd != nil && cmd.Prune != nil }
