package projectorcmd

import (
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/projection/status"
)

// maxBehindLines bounds the partitions named below the totals.
const maxBehindLines = 20

// behindLines prints the partitions recorded behind the journal (the
// store lost confirmed writes; issue 28), below the totals of projector
// status, with the way back.
func behindLines(w io.Writer, t status.OverviewTotals) error {
	if t.BehindCount == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "STORE BEHIND: %s lack writes the projector applied (the store lost confirmed writes):\n",
		cli.Plural(int64(t.BehindCount), "partition")); err != nil {
		return err
	}
	for _, b := range t.Behind[:min(len(t.Behind), maxBehindLines)] {
		if _, err := fmt.Fprintf(w, "  %s\n", b); err != nil {
			return err
		}
	}
	if n := len(t.Behind) - maxBehindLines; n > 0 {
		if _, err := fmt.Fprintf(w, "  and %d more (--json lists them all)\n", n); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "  rebuild them from the journal, projectors stopped: replay rebuild --table T --behind (docs/operating.md, \"When the store lost writes\")")
	return err
}
