package journal

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/internal/jsapi"
)

// EnsureOption configures the streams the Ensure functions create.
type EnsureOption func(*jsapi.EnsureOptions)

// WithReplicas sets the replica count of a stream created, and the count an
// existing stream must have (CheckReplicas). Zero, the default, creates a
// stream with one replica and accepts an existing one at any count.
func WithReplicas(n int) EnsureOption {
	return func(o *jsapi.EnsureOptions) { o.Replicas = n }
}

// CheckReplicas returns an error wrapping ErrReplicasMismatch when want is
// not zero and the existing stream cfg has another replica count. The
// projector never changes the count of an existing stream itself: scaling a
// stream moves its data between servers, and an instance started with a
// stale flag must not scale a cluster's streams down. JetStream changes the
// count of a stream in place; the error says how.
func CheckReplicas(cfg jetstream.StreamConfig, want int) error {
	have := max(cfg.Replicas, 1)
	if want == 0 || have == want {
		return nil
	}
	return fmt.Errorf("%w: stream %s has %d replicas, %d asked for; change it with `nats stream edit %s --replicas %d` (JetStream moves the data online), or ask for %d",
		ErrReplicasMismatch, cfg.Name, have, want, cfg.Name, want, have)
}
