package projectiontest

import (
	"context"
	"crypto/rand"
	"strings"

	"github.com/tablejournal/tablejournal/store"
)

var _ store.Store = (*namespaced)(nil)

// namespaced wraps a real store (Azure Tables, which lists partitions) so that each test sees its own tables on a
// server shared by the whole test binary (one Azurite): every table name
// gets a prefix unique to the store value.
type namespaced struct {
	store.Store
	prefix string
}

func newNamespaced(s store.Store) *namespaced {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return &namespaced{Store: s, prefix: "t" + string(b)}
}

func (n *namespaced) CreateTable(ctx context.Context, table string) error {
	return n.Store.CreateTable(ctx, n.prefix+table)
}

func (n *namespaced) DeleteTable(ctx context.Context, table string) error {
	return n.Store.DeleteTable(ctx, n.prefix+table)
}

func (n *namespaced) ListTables(ctx context.Context) ([]string, error) {
	all, err := n.Store.ListTables(ctx)
	if err != nil {
		return nil, err
	}
	var mine []string
	for _, t := range all {
		if rest, ok := strings.CutPrefix(strings.ToLower(t), n.prefix); ok {
			mine = append(mine, t[len(t)-len(rest):])
		}
	}
	return mine, nil
}

func (n *namespaced) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	return n.Store.Get(ctx, n.prefix+table, pk, rk)
}

func (n *namespaced) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	return n.Store.Query(ctx, n.prefix+table, q)
}

func (n *namespaced) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	return n.Store.Transact(ctx, n.prefix+table, pk, ops)
}

// Partitions lists the partitions of the test's table.
func (n *namespaced) Partitions(ctx context.Context, table string, fn func(pk string) error) error {
	return n.Store.Partitions(ctx, n.prefix+table, fn)
}
