package decide

import (
	"testing"

	"github.com/tablejournal/tablejournal/wire"
)

// TestPriorFrom: of an ID's outcomes, the newest one before the message
// that applied or was a duplicate decides it; rejections and outcomes at
// or after the message do not.
func TestPriorFrom(t *testing.T) {
	o := func(seq uint64, st wire.Status) wire.Outcome { return wire.Outcome{Seq: seq, Status: st} }
	tests := []struct {
		name string
		all  []wire.Outcome
		want Prior
	}{
		{"none", nil, Prior{}},
		{"only rejected", []wire.Outcome{o(3, wire.StatusRejected)}, Prior{}},
		{"applied before", []wire.Outcome{o(3, wire.StatusApplied), o(5, wire.StatusRejected)}, Prior{Seq: 3, Status: wire.StatusApplied}},
		{"newest earlier wins", []wire.Outcome{o(6, wire.StatusDuplicate), o(3, wire.StatusApplied)}, Prior{Seq: 6, Status: wire.StatusDuplicate}},
		{"own and later ignored", []wire.Outcome{o(10, wire.StatusApplied), o(12, wire.StatusApplied)}, Prior{}},
	}
	for _, tt := range tests {
		if got := PriorFrom(tt.all, 10); got != tt.want {
			t.Errorf("%s: PriorFrom = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
