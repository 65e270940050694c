package projection

import (
	"context"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// rowLayout is how the rows of a partition are stored: how the driver
// reads them back as row states (load) and writes a decided transaction
// as store operations (ops). The fence, the decision (package decide) and
// the order of the exactly-once path do not depend on it. versioned is the
// one layout today; another is another implementation, chosen when the
// Applier is made (a layout that keeps history apart also answers the
// reads of an erase, eraseKeys, and of a prune, pruneTx.decide).
type rowLayout interface {
	load(ctx context.Context, s store.Store, table, pk string, rks []string) (map[string]*rowState, error)
	ops(b *txn) []store.Op
}

// versioned is the layout of SPEC §4 (package rows): each logical row is a
// tip row plus version and tombstone rows in the same partition.
type versioned struct{}

func (versioned) load(ctx context.Context, s store.Store, table, pk string, rks []string) (map[string]*rowState, error) {
	return rows.Load(ctx, s, table, pk, rks)
}

func (versioned) ops(b *txn) []store.Op { return b.TxOps() }
