// Package erasure erases a row or a partition everywhere (SPEC §10,
// docs/erasure.md): [Eraser.PlanErase] counts what an erase removes, in a
// [Plan] (a replay.Plan) whose Apply, like [Eraser.EraseKey], publishes the
// erase, waits for the projector to apply it, removes the key's change events, earlier commands and their outcomes
// from JetStream with secure deletes, checks that nothing of the key is
// left and returns a receipt. Every step can be run again: a crash at any
// point leaves a state that the same call finishes.
package erasure

import (
	"time"

	"github.com/tablejournal/tablejournal/replay"
)

// Eraser erases keys of the tables of a replay.Source, which needs the
// journal. It is safe for concurrent use.
type Eraser struct {
	*replay.Source
	wait time.Duration
}

// New returns an Eraser of src.
func New(src *replay.Source) *Eraser { return &Eraser{Source: src} }

// WithWait returns a copy of r whose EraseKey waits at most d for the
// projector to apply the erase (0: as long as its context allows). It
// bounds that wait alone: removing the key's messages afterwards takes
// as long as it takes (tens of milliseconds a command, docs/erasure.md),
// bounded by the context only.
func (r *Eraser) WithWait(d time.Duration) *Eraser {
	c := *r
	c.wait = d
	return &c
}
