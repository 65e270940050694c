package projectorcmd

import (
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/projection/status"
)

// behindLines prints the partitions the store lost confirmed writes of
// (issue 28), below the totals of projector status, with the way back.
func behindLines(w io.Writer, t status.OverviewTotals) error {
	if t.BehindCount == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "STORE BEHIND: %s lack writes the projector applied (the store lost confirmed writes):\n",
		cli.Plural(int64(t.BehindCount), "partition")); err != nil {
		return err
	}
	for _, b := range t.Behind {
		if _, err := fmt.Fprintf(w, "  %s\n", b); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "  rebuild each from the journal: replay rebuild --table T --pk P (docs/operating.md, \"When the store lost writes\")")
	return err
}
