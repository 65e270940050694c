package projection_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestFirstSeenNeedsNoLookUp: commands whose IDs the journal never
// carried before are decided without looking up earlier outcomes (issue
// 39.2: no round trip for a new ID), and an ID carried again, here without
// a Nats-Msg-Id so the journal keeps it, is looked up and found: a
// duplicate with the same body, body-differs with another in another
// partition. The filter is given all the time it needs to reach each
// batch, so what is counted does not depend on timing.
func TestFirstSeenNeedsNoLookUp(t *testing.T) {
	defer projection.SetIDFilterWait(time.Minute)()
	ctx := journaltest.Context(t, time.Minute)
	h := projectiontest.Start(t, projectiontest.Backends("")[0].Open(t), projectiontest.Options{})
	p := h.StartProjector(projection.Config{})
	const n = 20
	var cmds []*events.Command
	for i := range n {
		c := oneRow(fmt.Sprintf("fresh-%d", i), events.OpUpsert, i, nil)
		c.PK = fmt.Sprintf("p%d", i%3)
		cmds = append(cmds, c)
		h.PublishAll(ctx, []*events.Command{c}) // one batch each, most likely
		h.WaitProjected(ctx)
	}
	st := p.Stats()
	if got, looked := st.FirstSeen.Load(), st.OutcomeLookups.Load(); got != n || looked != 0 {
		t.Fatalf("after %d new IDs: %d decided as first seen, %d look-ups; want %d and 0", n, got, looked, n)
	}

	same := oneRow("fresh-4", events.OpUpsert, 4, nil)
	same.PK = cmds[4].PK
	other := oneRow("fresh-5", events.OpUpsert, 99, nil)
	other.PK = "elsewhere"
	h.PublishAll(ctx, []*events.Command{same, other})
	h.WaitProjected(ctx)
	if got, looked := st.FirstSeen.Load(), st.OutcomeLookups.Load(); got != n || looked == 0 {
		t.Errorf("after two repeated IDs: %d first seen (want still %d), %d look-ups (want some)", got, n, looked)
	}
	latest := map[string]wire.Outcome{}
	for _, o := range h.Outcomes(ctx) {
		if o.Seq > latest[o.ID].Seq {
			latest[o.ID] = o
		}
	}
	if o := latest["fresh-4"]; o.Status != wire.StatusDuplicate {
		t.Errorf("fresh-4 again with its body: %+v, want duplicate", o)
	}
	if o := latest["fresh-5"]; o.Status != wire.StatusRejected || o.Code != wire.CodeBodyDiffers {
		t.Errorf("fresh-5 again with another body elsewhere: %+v, want rejected body-differs", o)
	}
}
