package projection

import (
	"context"
	"fmt"
	"testing"

	"github.com/tablejournal/tablejournal/projection/shards"
)

// TestDrainContext: a batch in flight outlives its shard's context when the
// shard is handed off or the projector stops, and is abandoned when the
// lease is lost.
func TestDrainContext(t *testing.T) {
	tests := []struct {
		name      string
		cause     error
		abandoned bool
	}{
		{"handoff or shutdown", nil, false},
		{"lease lost", fmt.Errorf("shard 3: %w", shards.ErrNotOwner), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			drain, done := drainContext(ctx)
			defer done()
			cancel(tt.cause)
			if tt.abandoned {
				<-drain.Done() // fails the test by its timeout if never
				return
			}
			if drain.Err() != nil {
				t.Fatalf("drain ended with its shard: %v", context.Cause(drain))
			}
		})
	}
}
