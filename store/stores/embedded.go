package stores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// ErrNoStore is wrapped by Open's error when Existing was given and the
// embedded store's file does not exist. Checked with errors.Is.
var ErrNoStore = errors.New("no embedded store")

// openEmbedded opens the SQLite store at path, creating its folder (mode
// 0700: the rows are the user's data) if needed, or, with Existing, only
// a file that exists.
func openEmbedded(ctx context.Context, path string, o options) (store.Store, io.Closer, error) {
	if o.existing {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("stores: %w: %s does not exist (a projector with this data folder creates it; or give the store with --tables)", ErrNoStore, path)
		} else if err != nil {
			return nil, nil, fmt.Errorf("stores: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("stores: %w", err)
	}
	var opts []sqlite.Option
	if o.exclusive {
		opts = append(opts, sqlite.Exclusive())
	}
	s, err := sqlite.Open(ctx, path, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("stores: %w", err)
	}
	return s, s, nil
}
