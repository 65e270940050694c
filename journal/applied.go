package journal

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/wire"
)

// Applied is how far a projector has applied one shard, as its durable
// consumer of the shard says: the projector acknowledges a message only
// once its transaction committed and its outcome is stored (SPEC §5), so
// the consumer's acknowledged floor is the one place "applied through
// sequence S" is read from. Every reader of that fact goes through
// [AppliedThrough] or [AppliedOf].
type Applied struct {
	// Consumer is false when the shard has no consumer of that name:
	// nothing of it was applied by that projector (Through is 0).
	Consumer bool
	// Through is the journal sequence up to which every message of the
	// shard is applied; 0 when none is.
	Through uint64
	// Pending counts the shard's messages after Through: delivered and not
	// yet acknowledged, and not yet delivered.
	Pending uint64
}

// AppliedOf reads an Applied from a consumer's info, for a caller that
// already holds it.
func AppliedOf(info *jetstream.ConsumerInfo) Applied {
	return Applied{
		Consumer: true,
		Through:  info.AckFloor.Stream,
		Pending:  info.NumPending + uint64(info.NumAckPending),
	}
}

// AppliedThrough reads how far the projector whose consumers are named
// after durable has applied shard of stream, with one request. A shard
// without a consumer is no error: the Applied says so.
func AppliedThrough(ctx context.Context, stream jetstream.Stream, durable string, shard int) (Applied, error) {
	name := wire.ConsumerName(durable, shard)
	cons, err := stream.Consumer(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return Applied{}, nil
	case err != nil:
		return Applied{}, fmt.Errorf("consumer %s: %w", name, err)
	}
	// Consumer has just read the info; asking again would be a second
	// request for the same answer.
	return AppliedOf(cons.CachedInfo()), nil
}
