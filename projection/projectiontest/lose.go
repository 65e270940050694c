package projectiontest

import (
	"context"
	"sync"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// LosingStore wraps a real store and loses one confirmed write: the first
// transaction that carries a row version written by command Lose answers
// success (with etags, as a real store would) and writes nothing, as
// Azurite killed before it flushed did. Later writes reach the store.
type LosingStore struct {
	store.Store
	Lose string

	mu   sync.Mutex
	lost int
}

// Lost counts the transactions lost (0 or 1).
func (l *LosingStore) Lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Transact loses the first transaction carrying a version of Lose.
func (l *LosingStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	for _, op := range ops {
		if v, ok := op.Props[rows.ColCmd]; ok && v.Str == l.Lose && op.RK != rows.FenceKey {
			l.mu.Lock()
			once := l.lost == 0
			l.lost = 1
			l.mu.Unlock()
			if !once {
				break
			}
			etags := make([]string, len(ops))
			for i, op := range ops {
				if op.Kind != store.Delete {
					etags[i] = `W/"lost"`
				}
			}
			return etags, nil
		}
	}
	return l.Store.Transact(ctx, table, pk, ops)
}
