package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/wire"
)

// EnsureChanges creates the change-feed stream (CHANGES), or brings an
// existing one to this configuration where it differs, and returns what it
// changed, for the caller to log. maxAge is how long change events are
// kept: if zero, a new stream keeps them forever and an existing stream's
// limit is left as it is; negative removes a limit set before.
// WithReplicas sets its replica count; an existing stream's is never
// changed (see CheckReplicas).
func EnsureChanges(ctx context.Context, js jetstream.JetStream, maxAge time.Duration, opts ...EnsureOption) ([]string, error) {
	replicas := jsapi.Options(opts).Replicas
	_, changes, err := jsapi.EnsureStream(ctx, js, jetstream.StreamConfig{
		Name:        wire.ChangesStream,
		Description: "tablejournal change feed: before and after images of every applied row change (changes.<table>.<pk-token>)",
		Subjects:    []string{wire.ChangesPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Duplicates:  jsapi.DefaultDuplicates,
		MaxAge:      max(maxAge, 0),
		Replicas:    max(replicas, 1),
	}, jsapi.Managed{MaxAge: maxAge != 0,
		Check: func(have jetstream.StreamConfig) error { return CheckReplicas(have, replicas) }})
	if err != nil {
		return nil, fmt.Errorf("change feed stream: %w", err)
	}
	return changes, nil
}
