package jsapi

import (
	"context"
	"errors"

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
