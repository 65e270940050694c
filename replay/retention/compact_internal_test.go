package retention

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestHorizonOf: a horizon is found under any spelling of its table, from
// the lower-case key it is recorded under or a key in another case that a
// journal compacted before holds; of several, the latest counts.
func TestHorizonOf(t *testing.T) {
	h := func(seq string) string { return `{"table":"Orders","seq":` + seq + `,"snapshot":"s","sha256":"x"}` }
	for _, c := range []struct {
		name  string
		md    map[string]string
		table string
		seq   uint64
	}{
		{"lower key, spelled table", map[string]string{"tablejournal.horizon.orders": h("7")}, "Orders", 7},
		{"lower key, capitals", map[string]string{"tablejournal.horizon.orders": h("7")}, "ORDERS", 7},
		{"key as spelled before", map[string]string{"tablejournal.horizon.Orders": h("5")}, "orders", 5},
		{"two spellings: the latest", map[string]string{"tablejournal.horizon.Orders": h("5"), "tablejournal.horizon.ORDERS": h("9")}, "oRders", 9},
		{"another table", map[string]string{"tablejournal.horizon.ordersx": h("5")}, "orders", 0},
		{"none", nil, "orders", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := horizonOf(jetstream.StreamConfig{Name: "JOURNAL", Metadata: c.md}, c.table)
			if err != nil || ok != (c.seq != 0) || got.Seq != c.seq {
				t.Fatalf("horizonOf(%s) = %+v %v (%v), want seq %d", c.table, got, ok, err, c.seq)
			}
		})
	}
	if key := horizonKey("CaseT"); key != "tablejournal.horizon.caset" {
		t.Fatalf("horizonKey(CaseT) = %q", key)
	}
}
