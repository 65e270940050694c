package jsapi

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStop, returned by ReadOrdered's fn, ends the read without an error.
var ErrStop = errors.New("stop reading")

// ReadOrdered reads stream through an ordered consumer of cfg (pulled with
// opts), passing fn each message and its metadata in stream order, until
// fn returns an error (ErrStop: none), reading fails or ctx ends (then
// ctx's error). The consumer is deleted when it returns, not left to
// lapse: JetStream bounds a stream's consumers.
func ReadOrdered(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig,
	fn func(jetstream.Msg, *jetstream.MsgMetadata) error, opts ...jetstream.PullMessagesOpt) error {
	cons, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return err
	}
	defer DeleteOrdered(ctx, js, stream, cons)
	it, err := cons.Messages(opts...)
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		if err := fn(m, md); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// OrderedIdle is how long NextOrDone waits for a message before it asks
// the stream whether one is still to come.
const OrderedIdle = 2 * time.Second

// NextOrDone returns the next message of it, an ordered consumer's
// iterator on filters of stream that last delivered sequence after, or nil
// once no message is left to deliver up to sequence to (0: the stream's
// end). A reader that stops when a message's NumPending is 0 needs it:
// the pending count includes messages deleted after it was counted (an
// erase's secure deletes), which never come, and waiting for them would
// hang until ctx ends. So after OrderedIdle without a message it asks the
// stream's leader for the next message on each filter after after; none,
// or none up to to, ends the read.
func NextOrDone(ctx context.Context, js jetstream.JetStream, stream string, it jetstream.MessagesContext, filters []string, after, to uint64) (jetstream.Msg, error) {
	for {
		nctx, cancel := context.WithTimeout(ctx, OrderedIdle)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return m, err
		}
		left, err := anyAfter(ctx, js, stream, filters, after, to)
		if err != nil || !left {
			return nil, err
		}
	}
}

// anyAfter reports whether stream holds a message on one of filters after
// sequence after and up to to (0: any).
func anyAfter(ctx context.Context, js jetstream.JetStream, stream string, filters []string, after, to uint64) (bool, error) {
	for _, f := range filters {
		m, err := LeaderGet(ctx, js, stream, MsgGetReq{Seq: after + 1, NextFor: f})
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if to == 0 || m.Seq <= to {
			return true, nil
		}
	}
	return false, nil
}
