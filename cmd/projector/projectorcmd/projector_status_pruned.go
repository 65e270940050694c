package projectorcmd

import (
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/projection/status"
)

// prunedLine prints the rows removed by prune commands (issue 19), below
// the totals of projector status.
func prunedLine(w io.Writer, t status.OverviewTotals) error {
	_, err := fmt.Fprintf(w, "pruned: %s removed by prune commands (the reporting instances, since they started)\n",
		cli.Plural(t.PrunedRows, "row"))
	return err
}
