package rows

import (
	"github.com/tablejournal/tablejournal/wire"
)

// VersionTable is the table that holds table's rows in the versioned
// layout, given the table's layout: the table itself, or its history table
// when plain. Every reader of the versioned layout (as-of, history, blame,
// rebuild, verify, prune, erase) reads this table.
func VersionTable(table string, l wire.Layout) (string, error) {
	if l == wire.LayoutPlain {
		return wire.HistoryTable(table)
	}
	return table, nil
}
