package move

import "errors"

// Errors of a move, checked with errors.Is.
var (
	// ErrTargetExists means a stream under the new name exists and is not
	// this move's copy of the journal.
	ErrTargetExists = errors.New("target stream exists and is not a copy of the journal")

	// ErrProjectorRunning means a projector (or another client) is pulling
	// from the journal's durable consumers: a cutover under it would leave
	// it reading a stream that no longer takes commands.
	ErrProjectorRunning = errors.New("a projector is running against the journal")

	// ErrMismatch means the copy and the journal differ after the copy
	// caught up: counts, first or last sequence, or the digest of their
	// messages.
	ErrMismatch = errors.New("copy differs from the journal")
)
