package projectorcmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tablejournal/tablejournal/internal/lockfile"
)

// DataLockFile is the lock file in a projector's data folder.
const DataLockFile = "tablejournal.lock"

// LockData makes this process the one user of the data folder dir: the
// embedded JetStream server and the embedded store in one folder must never
// be written by two processes (two servers on one JetStream store hand out
// the same sequences to different commands). The lock is released by
// Release or when the process dies. Another holder makes it fail with an
// error wrapping lockfile.ErrLocked that names the folder and the holder.
func LockData(dir string) (*lockfile.Lock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	l, err := lockfile.Acquire(filepath.Join(abs, DataLockFile))
	var le *lockfile.LockedError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("data folder %s is in use by %s; stop that process or give this one another --data: %w",
			abs, le.Holder, lockfile.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	return l, nil
}
