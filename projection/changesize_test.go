package projection

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// The largest change event, a row of the largest entity replaced by another
// with before and after images of characters JSON escapes six bytes wide,
// stays within wire.MaxChangeEventBytes, which stays within
// journal.MinMaxPayload; so does the largest outcome within
// wire.MaxOutcomeBytes.
func TestChangeEventAndOutcomeBounds(t *testing.T) {
	if wire.MaxChangeEventBytes > journal.MinMaxPayload || wire.MaxOutcomeBytes > journal.MinMaxPayload {
		t.Fatalf("bounds %d (change event), %d (outcome) exceed journal.MinMaxPayload %d", wire.MaxChangeEventBytes, wire.MaxOutcomeBytes, journal.MinMaxPayload)
	}
	pk := strings.Repeat("<", events.MaxKeyUnits)
	rk := strings.Repeat("<", (events.MaxKeyUnits-events.RowKeyOverhead)/3) // escaping ':' is not involved
	for _, ch := range []string{"<", "\x01", "€"} {
		e := edm.Entity{}
		for i := 0; edm.EntitySize(pk, rk, e) < events.MaxEntitySize-events.MaxBinaryBytes-64; i++ {
			e[fmt.Sprintf("p%03d", i)] = edm.String(strings.Repeat(ch, events.MaxBinaryBytes/2/len([]rune(ch))))
		}
		c := &events.Command{ID: strings.Repeat("i", events.MaxIDLen), Table: "orders", PK: pk,
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: rk, Entity: e}}}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		r := Result{Seq: 1 << 62, ID: c.ID, Status: wire.StatusApplied}
		msg, err := changeMsg(partition{"orders", pk}, r, Change{RK: rk, Kind: wire.ChangeUpdate, Version: 1 << 40, Before: e, After: e}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Data) > wire.MaxChangeEventBytes {
			t.Errorf("%q: change event of %d bytes, bound %d", ch, len(msg.Data), wire.MaxChangeEventBytes)
		}
		t.Logf("%q: change event %.2f MiB", ch, float64(len(msg.Data))/(1<<20))
	}

	o := wire.Outcome{ID: strings.Repeat("<", 1<<20), Seq: 1 << 62, Table: "orders", PK: pk, Status: wire.StatusRejected,
		Reason: strings.Repeat("\x01", 1<<20), At: time.Now()}
	for i := range events.MaxOpsPerCommand {
		o.Rows = append(o.Rows, wire.RowVersion{RK: rk + fmt.Sprint(i), Version: 1 << 40, Op: "upsertMerge", Deleted: true})
	}
	msg, err := outcomes.Message(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Data) > wire.MaxOutcomeBytes || msg.Subject != wire.OutcomesPrefix+".=" {
		t.Errorf("outcome of %d bytes on %q, want at most %d on outcomes.=", len(msg.Data), msg.Subject, wire.MaxOutcomeBytes)
	}
}
