// Package ctxtime holds the one wait that every retry loop of the module
// needs: sleeping for a duration unless a context ends first.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits for d, or returns ctx's error as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
