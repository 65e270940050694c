package rebuild

import "errors"

// ErrUnknownTable: a rebuild from the journal alone of a table the journal
// holds no command of (table names in subjects are case-sensitive);
// nothing is created. Checked with errors.Is.
var ErrUnknownTable = errors.New("no command of the table in the journal")
