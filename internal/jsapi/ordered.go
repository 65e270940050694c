package jsapi

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStop, returned by ReadOrdered's fn, ends the read without an error.
var ErrStop = errors.New("stop reading")

// A ReadOpt changes how ReadOrdered reads.
type ReadOpt func(*readOpts)

type readOpts struct {
	pull    []jetstream.PullMessagesOpt
	bounded bool
	to      uint64
}

// Pull passes opts to the ordered consumer's Messages.
func Pull(opts ...jetstream.PullMessagesOpt) ReadOpt {
	return func(o *readOpts) { o.pull = append(o.pull, opts...) }
}

// UpTo makes the read end by itself, without an error, once it passed fn
// the last message up to sequence to (0: the stream's end): the message at
// to, the one whose NumPending is 0 (none matching stored after it when it
// was delivered), or, the read waiting OrderedIdle without one, when the
// stream's leader holds no message on the consumer's filter subjects after
// the last delivered (and up to to); a message after to ends it before fn
// sees it. The last check is for the messages NumPending counted that were
// deleted meanwhile (an erase's secure deletes): they never come, and
// waiting for them would hang until ctx ends. It needs a consumer that
// delivers all messages or from a start sequence on.
func UpTo(to uint64) ReadOpt {
	return func(o *readOpts) { o.bounded, o.to = true, to }
}

// ReadOrdered reads stream through an ordered consumer of cfg, passing fn
// each message and its metadata in stream order, until fn returns an error
// (ErrStop: none), reading fails, ctx ends (then ctx's error) or, with
// UpTo, no message is left. The consumer is deleted when it returns, not
// left to lapse: JetStream bounds a stream's consumers.
func ReadOrdered(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig,
	fn func(jetstream.Msg, *jetstream.MsgMetadata) error, opts ...ReadOpt) error {
	var o readOpts
	for _, opt := range opts {
		opt(&o)
	}
	cons, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return err
	}
	defer DeleteOrdered(ctx, js, stream, cons)
	it, err := cons.Messages(o.pull...)
	if err != nil {
		return err
	}
	defer it.Stop()
	filters := cfg.FilterSubjects
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var last uint64 // the last sequence delivered, or the one before the start
	if cfg.OptStartSeq > 0 {
		last = cfg.OptStartSeq - 1
	}
	for {
		var m jetstream.Msg
		if o.bounded {
			m, err = nextOrDone(ctx, js, stream, it, filters, last, o.to)
		} else {
			m, err = it.Next(jetstream.NextContext(ctx))
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if m == nil {
			return nil
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		last = md.Sequence.Stream
		if o.bounded && o.to != 0 && last > o.to {
			return nil
		}
		if err := fn(m, md); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
		// Every message up to to was stored before the read began, and
		// NumPending counts the matching ones stored after this one.
		if o.bounded && (last == o.to || md.NumPending == 0) {
			return nil
		}
	}
}

// OrderedIdle is how long a read UpTo waits for a message before it asks
// the stream whether one is still to come.
const OrderedIdle = 2 * time.Second

// nextOrDone returns the next message of it, an ordered consumer's
// iterator on filters of stream that last delivered sequence after, or nil
// once no message is left to deliver up to sequence to (0: the stream's
// end): after OrderedIdle without a message it asks the stream's leader
// for the next message on each filter after after; none, or none up to to,
// ends the read (see UpTo).
func nextOrDone(ctx context.Context, js jetstream.JetStream, stream string, it jetstream.MessagesContext, filters []string, after, to uint64) (jetstream.Msg, error) {
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
