package repair

import "errors"

// ErrConflicts: an undo plan holds rows that later commands changed
// again, and Force was not set, so nothing was published. Checked with
// errors.Is. A rejected command is replay.ErrRejected.
var ErrConflicts = errors.New("rows changed by later commands")
