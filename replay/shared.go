package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// DefaultAwait bounds the wait for outcomes when ctx has no deadline.
const DefaultAwait = 2 * time.Minute

// TxBudget is the bytes of a projector transaction one command of a plan,
// or one transaction of a load, may use, with room for the store's wire
// encoding.
const TxBudget = store.MaxTxBytes * 3 / 4

// SeqAtMost is the filter that keeps the rows written at or before journal
// sequence seq.
func SeqAtMost(seq uint64) []store.Cond {
	return []store.Cond{{Prop: rows.ColSeq, Cmp: store.Le, Value: edm.Int64(int64(seq))}}
}

// CheckEmpty fails with ErrNotEmpty if table has a row.
func CheckEmpty(ctx context.Context, st store.Store, table string) error {
	_, any, err := store.First(ctx, st, table, store.Query{AllPartitions: true, Limit: 1})
	switch {
	case errors.Is(err, store.ErrTableNotFound):
		return nil
	case err != nil:
		return err
	case any:
		return fmt.Errorf("%w: %s holds rows; choose a new table or delete it", ErrNotEmpty, table)
	}
	return nil
}
