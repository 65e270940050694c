package tablejournal

import (
	"errors"

	"github.com/tablejournal/tablejournal/journal"
)

// Errors of the Client that are not rejections (those are in outcome.go,
// with ErrInvalid), checked with errors.Is.
var (
	// ErrNoTables is returned by reads of a Client opened without a table
	// store (WithStore).
	ErrNoTables = errors.New("tablejournal: no table store configured")

	// ErrNoJournal: Publish found no journal stream of the name WithStream
	// gave (by default the projector's, "JOURNAL"), or a stream of that
	// name that is not a journal. Nothing was published.
	ErrNoJournal = errors.New("no journal stream")

	// ErrBodyDiffers: Publish of a command ID the journal already holds
	// with another body. The journal kept the first body and dropped this
	// one: publish a new command under a new ID.
	ErrBodyDiffers = journal.ErrBodyDiffers
)
