// Package history reads the past of the projected tables (SPEC §6): a row,
// partition or table as it stood at a journal sequence ([Reader.AsOfRow],
// [Reader.AsOf], [Reader.AsOfErasures]), every version of a row
// ([Reader.History], [Diff]), what a command did ([Reader.Blame]), and
// whether a key was erased ([Reader.Erased]).
//
// It reads version rows only, never replays the journal: the state of a row
// at sequence S is its newest version with _seq <= S, absent if none or if
// that one is a tombstone. A point before a partition's prune horizon
// answers *replay.PrunedError; a key erased after it, *replay.ErasedError.
package history

import "github.com/tablejournal/tablejournal/replay"

// Reader reads the tables of a replay.Source through time. It is safe for
// concurrent use.
type Reader struct{ *replay.Source }

// New returns a Reader of src.
func New(src *replay.Source) *Reader { return &Reader{src} }
