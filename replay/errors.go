package replay

import "errors"

// Errors of replay, checked with errors.Is. Errors returned by this package
// wrap them with context (table, key, command ID, sequence).

// Naming a point.
var (
	// ErrBadPoint: a point that names no position of the journal (a
	// sequence beyond the head, a malformed time or sequence).
	ErrBadPoint = errors.New("bad journal point")
	// ErrNoOutcome: the command has no outcome (yet): it was never
	// published, or the projector has not reached it.
	ErrNoOutcome = errors.New("command has no outcome")
	// ErrNoJournal: the operation needs the journal and the Replayer was
	// made without a JetStream connection.
	ErrNoJournal = errors.New("no journal connection")
)

// Planning and applying undo and restore.
var (
	// ErrConflicts: an undo plan holds rows that later commands changed
	// again, and Force was not set, so nothing was published.
	ErrConflicts = errors.New("rows changed by later commands")
	// ErrRejected: at least one published undo or restore command was
	// rejected by the projector (its ifVersion guard failed: the table
	// changed between planning and applying).
	ErrRejected = errors.New("command rejected")
)

// Rebuilding, snapshots and loading.
var (
	// ErrNotEmpty: the destination table of a rebuild or load already holds
	// rows. Rebuild and load write into a fresh table.
	ErrNotEmpty = errors.New("destination table is not empty")
	// ErrBadSnapshot: the snapshot file is not one, is of an unknown
	// format, or is truncated or corrupt.
	ErrBadSnapshot = errors.New("bad snapshot")
	// ErrUnknownTable: a rebuild from the journal alone of a table the
	// journal holds no command of (table names in subjects are
	// case-sensitive); nothing is created.
	ErrUnknownTable = errors.New("no command of the table in the journal")
)
