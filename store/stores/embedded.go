package stores

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// openEmbedded opens the SQLite store at path, creating its folder (mode
// 0700: the rows are the user's data) if needed.
func openEmbedded(ctx context.Context, path string, o options) (store.Store, io.Closer, error) {
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
