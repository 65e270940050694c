package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/store"
)

var _ store.Scrubber = (*Store)(nil)

// Scrub implements store.Scrubber. Deletes zero the freed content of their
// pages (the write connection runs with PRAGMA secure_delete=ON), but the
// write-ahead log keeps the page images of earlier transactions until a
// checkpoint copies the newest ones into the file and truncates it. Scrub
// runs that checkpoint, waiting while readers hold older snapshots (a
// reader of another process, the projector's); then, if a file still holds
// one of values (a row deleted before secure_delete was on, left in a free
// page), it rewrites the file with VACUUM and checkpoints again.
func (s *Store) Scrub(ctx context.Context, values [][]byte) ([]string, error) {
	if err := s.checkpoint(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: scrub %s: %w", s.path, err)
	}
	held, err := s.holding(ctx, values)
	if err != nil || len(held) == 0 {
		return held, err
	}
	if _, err := s.wdb.ExecContext(ctx, "VACUUM"); err != nil {
		err = wrap(ctx, "vacuum", err)
		return nil, fmt.Errorf("sqlite: scrub %s: %w", s.path, err)
	}
	if err := s.checkpoint(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: scrub %s: %w", s.path, err)
	}
	return s.holding(ctx, values)
}

// errCheckpointBusy: a reader still uses the write-ahead log.
var errCheckpointBusy = errors.New("a reader holds the write-ahead log")

// checkpoint copies the write-ahead log into the file and truncates it to
// zero bytes, retrying while readers keep it busy, for at most a minute.
func (s *Store) checkpoint(ctx context.Context) error {
	op := func() error {
		var busy, logPages, done int
		if err := s.wdb.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done); err != nil {
			return backoff.Permanent(fmt.Errorf("checkpoint: %w", err))
		}
		if busy != 0 {
			return errCheckpointBusy
		}
		return nil
	}
	b := retry.Backoff(10*time.Millisecond, time.Second, time.Minute)
	return backoff.Retry(op, backoff.WithContext(b, ctx))
}

// files are the files the store owns: the database, its write-ahead log
// and the log's index.
func (s *Store) files() []string {
	return []string{s.path, s.path + "-wal", s.path + "-shm"}
}

// holding returns the base names of the store's files that hold any of
// values.
func (s *Store) holding(ctx context.Context, values [][]byte) ([]string, error) {
	var held []string
	for _, name := range s.files() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		found, err := fileHolds(name, values)
		if err != nil {
			return nil, fmt.Errorf("sqlite: read %s: %w", filepath.Base(name), err)
		}
		if found {
			held = append(held, filepath.Base(name))
		}
	}
	return held, nil
}

// fileHolds reads a file once and reports whether any of values occurs in
// it; a missing file holds nothing.
func fileHolds(name string, values [][]byte) (bool, error) {
	longest := 0
	for _, v := range values {
		longest = max(longest, len(v))
	}
	if longest == 0 {
		return false, nil
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	// Each window is the tail of the previous one (longest-1 bytes, so a
	// value across two reads is seen) and the next chunk.
	buf := make([]byte, 0, longest-1+1<<20)
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		for _, v := range values {
			if len(v) > 0 && bytes.Contains(buf, v) {
				return true, nil
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		keep := min(len(buf), longest-1)
		buf = append(buf[:0], buf[len(buf)-keep:]...)
	}
}
