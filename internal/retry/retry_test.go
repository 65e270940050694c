package retry

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

func TestBackoff(t *testing.T) {
	tests := []struct {
		name                         string
		initial, maxWait, maxElapsed time.Duration
	}{
		{"forever", 50 * time.Millisecond, time.Second, 0},
		{"bounded", 100 * time.Millisecond, 5 * time.Second, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Backoff(tt.initial, tt.maxWait, tt.maxElapsed)
			first := b.NextBackOff()
			if lo, hi := tt.initial/2, tt.initial*3/2; first < lo || first > hi {
				t.Errorf("first wait %v, want %v ± 50%%", first, tt.initial)
			}
			for range 50 {
				if d := b.NextBackOff(); d == backoff.Stop || d > tt.maxWait*3/2 {
					t.Fatalf("wait %v, want at most %v ± 50%% and never Stop this early", d, tt.maxWait)
				}
			}
			if b.MaxElapsedTime != tt.maxElapsed {
				t.Errorf("MaxElapsedTime %v, want %v", b.MaxElapsedTime, tt.maxElapsed)
			}
		})
	}
}
