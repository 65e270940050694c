package rebuild

import "errors"

// Errors of a rebuild, checked with errors.Is.
var (
	// ErrUnknownTable: a rebuild from the journal alone of a table the
	// journal holds no command of, under any spelling of its name; nothing
	// is created.
	ErrUnknownTable = errors.New("no command of the table in the journal")
	// ErrIntoSource: a rebuild into the table it rebuilds, under any
	// spelling of its name (table names are case-insensitive).
	ErrIntoSource = errors.New("the destination is the source table")
	// ErrPlainUnsupported: what a rebuild does not do yet with a plain
	// table (SPEC §4), named in the error.
	ErrPlainUnsupported = errors.New("not supported for a plain table yet")
)
