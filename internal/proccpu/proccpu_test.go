//go:build unix

package proccpu

import "testing"

// TestUsedGrows: work done shows in the CPU time used.
func TestUsedGrows(t *testing.T) {
	before := Used()
	x := 0
	for i := 0; Used()-before < 5e6 && i < 1e10; i++ { // at least 5 ms of CPU
		x += i
	}
	if after := Used(); after <= before {
		t.Fatalf("CPU used went from %v to %v after work", before, after)
	}
	_ = x
}
