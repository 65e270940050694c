package projection

import (
	"context"
	"errors"

	"github.com/tablejournal/tablejournal/projection/decide"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// readFence reads a partition's fence; a missing fence (or table) is
// reported as fence{exists: false}.
func (a *Applier) readFence(ctx context.Context, table, pk string) (fence, error) {
	return retryStore(ctx, a.policy, "read the fence of "+table+"/"+pk, func() (fence, error) {
		e, err := a.store.Get(ctx, table, pk, rows.FenceKey)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
			return fence{}, nil
		case err != nil:
			return fence{}, err
		}
		return decide.DecodeFence(e)
	})
}
