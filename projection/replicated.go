package projection

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// replicatedStream reports whether the journal stream has more than one
// replica, so that its consumers (which inherit the count) are replicated.
func replicatedStream(ctx context.Context, js jetstream.JetStream, name string) (bool, error) {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return false, err
	}
	return s.CachedInfo().Config.Replicas > 1, nil
}
