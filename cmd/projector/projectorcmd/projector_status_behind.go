package projectorcmd

import (
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/projection/status"
	"github.com/tablejournal/tablejournal/wire"
)

// maxBehindLines bounds the partitions named below the totals.
const maxBehindLines = 20

// behindLines prints the partitions held by a row the projector did not
// write (SPEC §5, "A held partition") and those recorded behind the
// journal (the store lost confirmed writes; issue 28), below the totals
// of projector status, each with the way back.
func behindLines(w io.Writer, t status.OverviewTotals) error {
	if len(t.Held) > 0 {
		if err := partitionLines(w, fmt.Sprintf("HELD: %s wait on a row the projector did not write (the others go on):",
			cli.Plural(int64(len(t.Held)), "partition")), t.Held,
			"deal with the row, then: projector resume --table T --pk P (docs/operating.md, \"A held partition\")"); err != nil {
			return err
		}
	}
	if t.BehindCount == 0 {
		return nil
	}
	return partitionLines(w, fmt.Sprintf("STORE BEHIND: %s lack writes the projector applied (the store lost confirmed writes):",
		cli.Plural(int64(t.BehindCount), "partition")), t.Behind,
		"rebuild them from the journal, projectors stopped: replay rebuild --table T --behind (docs/operating.md, \"When the store lost writes\")")
}

// partitionLines prints a heading, up to maxBehindLines partitions and
// the way back.
func partitionLines(w io.Writer, heading string, parts []wire.BehindPartition, way string) error {
	if _, err := fmt.Fprintln(w, heading); err != nil {
		return err
	}
	for _, b := range parts[:min(len(parts), maxBehindLines)] {
		if _, err := fmt.Fprintf(w, "  %s\n", b); err != nil {
			return err
		}
	}
	if n := len(parts) - maxBehindLines; n > 0 {
		if _, err := fmt.Fprintf(w, "  and %d more (--json lists them all)\n", n); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "  "+way)
	return err
}
