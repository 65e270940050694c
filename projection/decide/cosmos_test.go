package decide

import (
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/wire"
)

// TestCosmosLimitsInBatch: with the limits of Cosmos DB for Table, the
// projector rejects a command that breaks one by its rule, as the writer
// does (events.Limits), applies the rest, and keeps each transaction
// within Cosmos's 2 MB: commands that fit Azure's 4 MiB together go to two
// transactions.
func TestCosmosLimitsInBatch(t *testing.T) {
	big := func(rk string) events.RowOp {
		return events.RowOp{Op: events.OpUpsert, RK: rk, Entity: edm.Entity{
			"a": edm.Binary(make([]byte, 60<<10)), "b": edm.Binary(make([]byte, 60<<10)),
			"c": edm.Binary(make([]byte, 60<<10)), "d": edm.Binary(make([]byte, 60<<10)),
			"e": edm.Binary(make([]byte, 60<<10)), "f": edm.Binary(make([]byte, 60<<10)),
			"g": edm.Binary(make([]byte, 60<<10)), "h": edm.Binary(make([]byte, 60<<10))}}
	}
	b := NewTxn("p", map[string]*rowState{}, events.CosmosLimits)
	b.Seen = map[string]uint64{}
	entries := []Entry{
		entry(1, "c1", upsert(strings.Repeat("k", 255-events.RowKeyOverhead+1), "n", 1)),
		entry(2, "c2", upsert("ok", "etag", 1)),
		entry(3, "c3", upsert("ok", "n", 3)),
		entry(4, "c4", big("r1"), big("r2")),
		entry(5, "c5", big("r3"), big("r4")),
	}
	var full int
	for _, e := range entries {
		if err := b.Add(e); err != nil {
			if err != ErrFull {
				t.Fatal(err)
			}
			full = int(e.Seq)
			break
		}
	}
	want := []struct {
		status wire.Status
		reason string
	}{{wire.StatusRejected, string(rules.KeyTooLong)}, {wire.StatusRejected, string(rules.PropertySystem)}, {wire.StatusApplied, ""}, {wire.StatusApplied, ""}}
	if len(b.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(b.Results), len(want), b.Results)
	}
	for i, w := range want {
		r := b.Results[i]
		if r.Status != w.status || !strings.Contains(r.Reason, w.reason) || w.reason != "" && !strings.Contains(r.Reason, "Cosmos DB for Table") {
			t.Errorf("seq %d: %s %q, want %s by rule %q", r.Seq, r.Status, r.Reason, w.status, w.reason)
		}
	}
	if full != 5 || b.totalBytes > events.CosmosLimits.TxBytes() {
		t.Errorf("batch full at seq %d with %d bytes, want full at 5 within %d", full, b.totalBytes, events.CosmosLimits.TxBytes())
	}
	// The same commands fit one transaction on Azure.
	az := NewTxn("p", map[string]*rowState{}, events.Limits{})
	az.Seen = map[string]uint64{}
	for _, e := range entries[3:] {
		if err := az.Add(e); err != nil {
			t.Fatalf("Azure: seq %d: %v", e.Seq, err)
		}
	}
}
