package lost

import (
	"cmp"
	"slices"

	"github.com/tablejournal/tablejournal/wire"
)

// sortEntries orders entries by table, then partition key.
func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return Compare(a.BehindPartition, b.BehindPartition) })
}

// Compare orders partitions by table, then partition key.
func Compare(a, b wire.BehindPartition) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.PK, b.PK))
}
