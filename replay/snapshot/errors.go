package snapshot

import "errors"

// ErrBadSnapshot: the snapshot file is not one, is of an unknown format,
// or is truncated or corrupt. Checked with errors.Is.
var ErrBadSnapshot = errors.New("bad snapshot")
