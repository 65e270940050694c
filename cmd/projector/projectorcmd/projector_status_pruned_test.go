package projectorcmd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestProjectorStatusPruned: projector status shows the rows prune
// commands removed (the projector's PrunedRows, in its status reports),
// in --json totals and as a line of text.
func TestProjectorStatusPruned(t *testing.T) {
	t.Parallel()
	ctx := journaltest.Context(t, 2*time.Minute)
	e := startMetricsEnv(t)
	url := e.h.Server.ClientURL()
	e.projector(t)
	var cmds []*events.Command
	for i := range 6 {
		cmds = append(cmds, &events.Command{ID: fmt.Sprintf("v%d", i), Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int64(int64(i))}}}})
	}
	seqs := e.h.PublishAll(ctx, cmds)
	prune := &events.Command{ID: "prune", Table: "orders", PK: "p", Prune: &events.Prune{Horizon: seqs[len(seqs)-1]}}
	ps := e.h.PublishAll(ctx, []*events.Command{prune})
	o, err := outcomes.NewReader(e.h.JS).Await(ctx, prune.ID, ps[0])
	if err != nil || o.Status != wire.StatusApplied || o.Pruned == 0 {
		t.Fatalf("prune outcome %+v, %v", o, err)
	}
	projectiontest.WaitFor(t, ctx, "the pruned rows are reported", func() (bool, error) {
		stdout, stderr, code := runStatus(t, ctx, url, "--json")
		if code != 0 {
			return false, fmt.Errorf("exit %d: %s", code, stderr)
		}
		ov := statusJSON(t, stdout)
		if ov.Totals.PrunedRows > o.Pruned {
			t.Fatalf("status counts %d pruned rows, the only prune removed %d", ov.Totals.PrunedRows, o.Pruned)
		}
		return ov.Totals.PrunedRows == o.Pruned, nil
	})
	stdout, stderr, code := runStatus(t, ctx, url)
	want := fmt.Sprintf("pruned: %d rows removed by prune commands", o.Pruned)
	if code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("status: exit %d, want %q:\n%s%s", code, want, stdout, stderr)
	}
}
