package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/tablejournal/tablejournal/internal/lockfile"
	"github.com/tablejournal/tablejournal/store"
)

var _ store.Store = (*Store)(nil)

// Store is a table store in one SQLite file. It is safe for concurrent use,
// and several Stores, in one process or several, may open the same file;
// at most one of them with Exclusive.
type Store struct {
	path      string
	exclusive bool
	lock      *lockfile.Lock // held with Exclusive
	wdb       *sql.DB        // one connection: every write, in BEGIN IMMEDIATE transactions
	rdb       *sql.DB        // a pool of read-only connections
	now       func() time.Time

	w writeStmts
	r readStmts

	mu    sync.Mutex
	scans map[scanShape]*sql.Stmt // prepared range scans on rdb, by shape
}

// busyTimeout is how long a writer waits for another process's write lock
// before it gives up with store.ErrBusy. A variable for tests.
var busyTimeout = 10 * time.Second

// schemaVersion is the file format, kept in PRAGMA user_version.
const schemaVersion = 1

const schema = `
CREATE TABLE IF NOT EXISTS tables (
	id   INTEGER PRIMARY KEY AUTOINCREMENT,
	name TEXT NOT NULL UNIQUE COLLATE NOCASE
);
CREATE TABLE IF NOT EXISTS entities (
	tid   INTEGER NOT NULL,
	pk    BLOB NOT NULL,
	rk    BLOB NOT NULL,
	ts    INTEGER NOT NULL,
	props BLOB NOT NULL,
	PRIMARY KEY (tid, pk, rk)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS clock (
	id    INTEGER PRIMARY KEY CHECK (id = 0),
	ticks INTEGER NOT NULL
);
INSERT OR IGNORE INTO clock (id, ticks) VALUES (0, 0);
`

// ErrLocked is returned by Open with Exclusive when another Store, in this
// process or another, holds the file exclusively. Checked with errors.Is;
// the error names the holder's pid, host and start time.
var ErrLocked = lockfile.ErrLocked

// Option configures Open.
type Option func(*Store)

// Exclusive makes the Store the file's one owner, for as long as it is
// open: the process that writes the projected tables. It takes a lock on
// the file PATH.lock beside the store, which a second Exclusive Open of the
// same file, in any process, is refused with ErrLocked. The operating
// system drops the lock when the process dies, so a killed owner leaves no
// stale lock. Opens without Exclusive (the replay tools, reading while the
// projector writes) neither take nor check it.
func Exclusive() Option {
	return func(s *Store) { s.exclusive = true }
}

// Open opens the store in the file at path, creating it if needed.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	s := &Store{path: path, now: time.Now, scans: make(map[scanShape]*sql.Stmt)}
	for _, o := range opts {
		o(s)
	}
	if s.exclusive {
		l, err := lockfile.Acquire(path + ".lock")
		if err != nil {
			return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
		}
		s.lock = l
	}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	ms := fmt.Sprint(busyTimeout.Milliseconds())
	wdsn, err := dsn(s.path,
		"_pragma=busy_timeout("+ms+")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(FULL)",
		// Deletes zero what they free, so no deleted row stays in the
		// file's pages (erasure, SPEC §10; see Scrub).
		"_pragma=secure_delete(ON)",
		"_txlock=immediate")
	if err != nil {
		return err
	}
	if s.wdb, err = sql.Open("sqlite", wdsn); err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)

	var mode string
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, want wal (is the file on a network file system?)", mode)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}

	rdsn, err := dsn(s.path, "_pragma=busy_timeout("+ms+")", "_pragma=query_only(1)")
	if err != nil {
		return err
	}
	if s.rdb, err = sql.Open("sqlite", rdsn); err != nil {
		return err
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	s.rdb.SetMaxOpenConns(readers)
	s.rdb.SetMaxIdleConns(readers)

	if err := s.w.prepare(ctx, s.wdb); err != nil {
		return err
	}
	return s.r.prepare(ctx, s.rdb)
}

// dsn is the modernc.org/sqlite data source name of a file with params.
func dsn(path string, params ...string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return u.String() + "?" + strings.Join(params, "&"), nil
}

func (s *Store) migrate(ctx context.Context) error {
	return s.write(ctx, "migrate", func(tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		switch {
		case v == schemaVersion:
			return nil
		case v > schemaVersion:
			return fmt.Errorf("file format %d is newer than this program's %d", v, schemaVersion)
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
}

// Close closes the store. Transactions in flight finish first.
func (s *Store) Close() error {
	var errs []error
	for _, db := range []*sql.DB{s.rdb, s.wdb} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	errs = append(errs, s.lock.Release())
	s.lock = nil
	return errors.Join(errs...)
}

// write runs fn in a write transaction (BEGIN IMMEDIATE) and commits if it
// returns nil.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return wrap(ctx, what, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return wrap(ctx, what, err)
	}
	return wrap(ctx, what, tx.Commit())
}

// SQLite's primary result codes for a lock held by another connection.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// wrap adds context to an error: the store's own errors (sentinels and
// *store.TxError) pass unchanged; a lock timeout becomes store.ErrBusy; an
// error caused by ctx wraps ctx.Err().
func wrap(ctx context.Context, what string, err error) error {
	var txErr *store.TxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &txErr), isStoreErr(err):
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("sqlite %s: %w", what, ctx.Err())
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		if c := se.Code() & 0xff; c == sqliteBusy || c == sqliteLocked {
			return fmt.Errorf("sqlite %s: %w: %w", what, store.ErrBusy, err)
		}
	}
	return fmt.Errorf("sqlite %s: %w", what, err)
}

func isStoreErr(err error) bool {
	for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrPrecondition, store.ErrTableNotFound,
		store.ErrTableExists, store.ErrTooLarge, store.ErrInvalid, store.ErrBusy} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
