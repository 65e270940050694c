package lockfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrLocked is wrapped by the error of Acquire when another process holds
// the lock. Check it with errors.Is; the *LockedError it comes in names the
// holder.
var ErrLocked = errors.New("locked by another process")

// Holder is what the holding process records in the lock file.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Since   time.Time `json:"since"`
	Command string    `json:"command,omitempty"`
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "a process that has not recorded itself yet"
	}
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Command != "" {
		s = h.Command + " " + s
	}
	if h.Host != "" {
		s += " on " + h.Host
	}
	if !h.Since.IsZero() {
		s += " since " + h.Since.UTC().Format(time.RFC3339)
	}
	return s
}

// LockedError says which lock file another process holds, and who.
type LockedError struct {
	Path   string
	Holder Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is held by %s", e.Path, e.Holder)
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a held lock. Release it with Release; the process's exit
// releases it too.
type Lock struct {
	f    *os.File
	path string
}

// Acquire takes the lock on the file at path, creating the file (mode
// 0600) but not its folder. It never waits: if another process holds the
// lock, it returns a *LockedError wrapping ErrLocked. The lock is per open
// file, so a second Acquire of the same path in the same process fails too.
func Acquire(path string) (*Lock, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	if !held {
		h := readHolder(f)
		f.Close()
		return nil, &LockedError{Path: abs, Holder: h}
	}
	host, _ := os.Hostname()
	cmd := ""
	if len(os.Args) > 0 {
		cmd = filepath.Base(os.Args[0])
	}
	rec, _ := json.Marshal(Holder{PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second), Command: cmd})
	if err := record(f, append(rec, '\n')); err != nil {
		unlock(f)
		f.Close()
		return nil, fmt.Errorf("lock %s: record the holder: %w", abs, err)
	}
	return &Lock{f: f, path: abs}, nil
}

// record replaces the file's content with rec.
func record(f *os.File, rec []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(rec, 0)
	return err
}

// readHolder reads what the holder recorded; a zero Holder if nothing
// readable is there yet.
func readHolder(f *os.File) Holder {
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	var h Holder
	if err != nil || json.Unmarshal(bytes.TrimSpace(b), &h) != nil {
		return Holder{}
	}
	return h
}

// Path returns the lock file's absolute path.
func (l *Lock) Path() string { return l.path }

// Release clears the holder record and releases the lock. The lock file
// stays: removing it would let a process that opened it before the removal
// lock a file no one else sees. Release of a nil Lock does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	terr := l.f.Truncate(0)
	uerr := unlock(l.f)
	cerr := l.f.Close()
	l.f = nil
	return errors.Join(terr, uerr, cerr)
}
