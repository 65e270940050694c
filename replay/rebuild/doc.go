// Package rebuild re-projects the journal into a fresh table
// ([Rebuilder.Rebuild], optionally after loading a snapshot), checks that a
// live table still equals its journal ([Rebuilder.Verify]) and compares two
// tables row for row ([Rebuilder.DiffTables]). It applies through
// projection.Applier, the projector's own apply code.
package rebuild

import "github.com/tablejournal/tablejournal/replay"

// Rebuilder rebuilds, verifies and diffs the tables of a replay.Source. It
// is safe for concurrent use.
type Rebuilder struct{ *replay.Source }

// New returns a Rebuilder of src.
func New(src *replay.Source) *Rebuilder { return &Rebuilder{src} }
