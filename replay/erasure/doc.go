// Package erasure erases a row or a partition everywhere (SPEC §10,
// docs/erasure.md): [Eraser.PlanErase] counts what an erase removes, in a
// [Plan] (a replay.Plan) whose Apply, like [Eraser.EraseKey], publishes the
// erase, waits for the projector to apply it, removes the key's change events, earlier commands and their outcomes
// from JetStream with secure deletes, checks that nothing of the key is
// left and returns a receipt. Every step can be run again: a crash at any
// point leaves a state that the same call finishes.
package erasure

import "github.com/tablejournal/tablejournal/replay"

// Eraser erases keys of the tables of a replay.Source, which needs the
// journal. It is safe for concurrent use.
type Eraser struct{ *replay.Source }

// New returns an Eraser of src.
func New(src *replay.Source) *Eraser { return &Eraser{src} }
