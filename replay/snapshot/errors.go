package snapshot

import "errors"

// ErrBadSnapshot: the snapshot file is not one, is of an unknown format,
// or is truncated or corrupt. Checked with errors.Is.
var ErrBadSnapshot = errors.New("bad snapshot")

// ErrErasureUnchecked: Load has no journal to read the erasures after the
// snapshot's sequence from, so it cannot drop the rows of keys erased since
// (SPEC §10), and was not told to load without that check
// (LoadConfig.SkipErasureCheck). Checked with errors.Is.
var ErrErasureUnchecked = errors.New("erasures unchecked")
