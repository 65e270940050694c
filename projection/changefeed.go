package projection

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// EnsureChangeFeed creates the change-feed stream, or brings an existing one
// to this configuration where it differs (journal.EnsureStream) and returns
// what it changed. maxAge is how long change events are kept: if zero, a
// new stream keeps them forever and an existing stream's limit is left as
// it is; negative removes a limit set before. journal.WithReplicas sets its
// replica count; an existing stream's is never changed (see
// journal.CheckReplicas).
func EnsureChangeFeed(ctx context.Context, js jetstream.JetStream, maxAge time.Duration, opts ...journal.EnsureOption) ([]string, error) {
	replicas := journal.Replicas(opts...)
	_, changes, err := journal.EnsureStream(ctx, js, jetstream.StreamConfig{
		Name:        wire.ChangesStream,
		Description: "tablejournal change feed: before and after images of every applied row change (changes.<table>.<pk-token>)",
		Subjects:    []string{wire.ChangesPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Duplicates:  2 * time.Minute,
		MaxAge:      max(maxAge, 0),
		Replicas:    max(replicas, 1),
	}, journal.Managed{MaxAge: maxAge != 0,
		Check: func(have jetstream.StreamConfig) error { return journal.CheckReplicas(have, replicas) }})
	if err != nil {
		return nil, fmt.Errorf("change feed stream: %w", err)
	}
	return changes, nil
}

// logStreamChanges says what starting the projector changed in an existing
// stream's configuration: never silently.
func logStreamChanges(log *slog.Logger, stream string, changes []string) {
	for _, c := range changes {
		log.Warn("stream configuration updated", "stream", stream, "change", c)
	}
}
