package projection

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// A request the store refused as busy is retried exponentially, but never
// after more than about a second: throttling limits are per second, and a
// partition asleep longer stalls its shard's batch (see maxBusyWait).
func TestBusyBackoffCapped(t *testing.T) {
	// One policy for every store call: transactions, reads, table creation.
	for _, tt := range []struct {
		name string
		b    backoff.BackOff
	}{
		{"bounded", NewApplier(nil, ApplierConfig{MaxRetry: time.Hour}).policy.backoff()},
		{"unbounded", NewApplier(nil, ApplierConfig{}).policy.backoff()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.b.Reset() // as backoff.Retry does first
			var waits []time.Duration
			for range 40 {
				waits = append(waits, tt.b.NextBackOff())
			}
			// ±50% jitter around an interval that starts at 50 ms.
			if w := waits[0]; w < 25*time.Millisecond || w > 75*time.Millisecond {
				t.Errorf("first wait %s, want 50 ms ± 50%%", w)
			}
			for i, w := range waits {
				if w == backoff.Stop || w > maxBusyWait*3/2 {
					t.Fatalf("wait %d: %s, want at most %s (waits %v)", i+1, w, maxBusyWait*3/2, waits)
				}
			}
			if w := waits[len(waits)-1]; w < maxBusyWait/2 {
				t.Errorf("wait 40: %s, want it grown to about %s", w, maxBusyWait)
			}
		})
	}
}
