package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/rows"
)

// Errors that every part of replay may return, checked with errors.Is.
// Errors wrap them with context (table, key, command ID, sequence). The
// sub-packages keep the errors of their own concept (ErrConflicts in
// repair, ErrBadSnapshot in snapshot, the journal horizon's in retention,
// ErrEraseIncomplete in erasure, ErrUnknownTable in rebuild).

// Naming a point.
var (
	// ErrBadPoint: a point that names no position of the journal (a
	// sequence beyond the head, a malformed time or sequence).
	ErrBadPoint = errors.New("bad journal point")
	// ErrNoOutcome: the command has no outcome (yet): it was never
	// published, or the projector has not reached it.
	ErrNoOutcome = errors.New("command has no outcome")
	// ErrNoJournal: the operation needs the journal and the Source was
	// made without a JetStream connection.
	ErrNoJournal = errors.New("no journal connection")
)

var (
	// ErrRejected: at least one command replay published (an undo, a
	// restore, a prune, an erase) was rejected by the projector (for undo
	// and restore, its ifVersion guard failed: the table changed between
	// planning and applying).
	ErrRejected = errors.New("command rejected")
	// ErrNotEmpty: the destination table of a rebuild or load already holds
	// rows. Rebuild and load write into a fresh table.
	ErrNotEmpty = errors.New("destination table is not empty")
)

// ErrPruned: the point asked about is before its partition's prune
// horizon (SPEC §4, §6): the versions that answered it were removed by a
// prune command. The error is a *PrunedError naming the horizon and the
// prune.
var ErrPruned = errors.New("history pruned")

// PrunedError says which partition's history is pruned before which
// horizon, and by which prune command.
type PrunedError struct {
	Table, PK string
	// Seq is the point asked about.
	Seq     uint64
	Horizon rows.Horizon
}

func (e *PrunedError) Error() string {
	return fmt.Sprintf("%s/%q at journal sequence %d: %v: the partition's history before sequence %d was removed by prune command %s",
		e.Table, e.PK, e.Seq, ErrPruned, e.Horizon.Seq, e.Horizon.Cmd)
}

// Unwrap returns ErrPruned.
func (e *PrunedError) Unwrap() error { return ErrPruned }

// ErrErased: the key asked about was erased (SPEC §10); the *ErasedError
// says by which command at which sequence.
var ErrErased = errors.New("erased")

// ErasedError says that a key was erased, by which command and when.
type ErasedError struct {
	Table, PK string
	RK        *string // nil: the whole partition was erased
	Cmd       string
	Seq       uint64
	At        time.Time
}

func (e *ErasedError) Error() string {
	return fmt.Sprintf("%s/%q: erased by command %s at seq %d", e.Table, e.PK, e.Cmd, e.Seq)
}

// Unwrap returns ErrErased.
func (e *ErasedError) Unwrap() error { return ErrErased }
