package projection

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/projection/shards"
)

// TestDrainContext: a batch in flight outlives its shard's context when the
// shard is handed off or the projector stops, for at most the drain
// timeout, and is abandoned at once when the lease is lost.
func TestDrainContext(t *testing.T) {
	lost := fmt.Errorf("shard 3: %w", shards.ErrNotOwner)
	tests := []struct {
		name      string
		timeout   time.Duration
		cause     error
		abandoned error // the drain's cause; nil: it outlives its shard
	}{
		{"handoff or shutdown", 0, nil, nil},
		{"handoff or shutdown, no bound", -1, nil, nil},
		{"drain timed out", time.Millisecond, nil, ErrDrainTimeout},
		{"lease lost", 0, lost, shards.ErrNotOwner},
		{"lease lost, with a bound", time.Hour, lost, shards.ErrNotOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			drain, done := drainContext(ctx, tt.timeout)
			defer done()
			cancel(tt.cause)
			if tt.abandoned != nil {
				<-drain.Done() // fails the test by its timeout if never
				if cause := context.Cause(drain); !errors.Is(cause, tt.abandoned) {
					t.Fatalf("drain ended with %v, want %v", cause, tt.abandoned)
				}
				return
			}
			if drain.Err() != nil {
				t.Fatalf("drain ended with its shard: %v", context.Cause(drain))
			}
		})
	}
}
