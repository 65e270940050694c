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
	var it jetstream.MessagesContext
	open := func() error {
		cons, err := js.OrderedConsumer(ctx, stream, cfg)
		if err != nil {
			return err
		}
		next, err := cons.Messages(o.pull...)
		if err != nil {
			DeleteOrdered(ctx, js, stream, cons)
			return err
		}
		it = &deletingIter{MessagesContext: next, del: func() { DeleteOrdered(ctx, js, stream, cons) }}
		return nil
	}
	if err := open(); err != nil {
		return err
	}
	defer func() { it.Stop() }()
	filters := cfg.FilterSubjects
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var last uint64 // the last sequence delivered, or the one before the start
	if cfg.OptStartSeq > 0 {
		last = cfg.OptStartSeq - 1
	}
	for {
		var (
			m   jetstream.Msg
			err error
		)
		if o.bounded {
			m, err = nextOrDone(ctx, js, stream, it, filters, last, o.to)
		} else {
			m, err = it.Next(jetstream.NextContext(ctx))
		}
		if errors.Is(err, errStalled) {
			// Messages are left and none comes: the consumer is gone
			// without a word (its server restarted), and the library's
			// heartbeat check never fires across reads this short. Read
			// on through a new one, from after the last message read.
			it.Stop()
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
			if err := open(); err != nil {
				return err
			}
			continue
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

// deletingIter is an ordered consumer's iterator that deletes the consumer
// when stopped, rather than leaving it to lapse: JetStream bounds a
// stream's consumers.
type deletingIter struct {
	jetstream.MessagesContext
	del func()
}

func (d *deletingIter) Stop() {
	d.MessagesContext.Stop()
	d.del()
}

// OrderedIdle is how long a read UpTo waits for a message before it asks
// the stream whether one is still to come.
const OrderedIdle = 2 * time.Second

// stallIdle is how many OrderedIdle periods in a row a read UpTo waits
// without a message while the stream holds one for it, before it takes
// its consumer for gone (errStalled).
const stallIdle = 3

// errStalled: the stream holds a message for the read, and its consumer
// delivered none for stallIdle idle periods.
var errStalled = errors.New("ordered consumer stalled")

// nextOrDone returns the next message of it, an ordered consumer's
// iterator on filters of stream that last delivered sequence after, or nil
// once no message is left to deliver up to sequence to (0: the stream's
// end): after OrderedIdle without a message it asks the stream's leader
// for the next message on each filter after after; none, or none up to to,
// ends the read (see UpTo). One there while nothing came for stallIdle
// periods is errStalled.
func nextOrDone(ctx context.Context, js jetstream.JetStream, stream string, it jetstream.MessagesContext, filters []string, after, to uint64) (jetstream.Msg, error) {
	for idle := 1; ; idle++ {
		nctx, cancel := context.WithTimeout(ctx, OrderedIdle)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return m, err
		}
		left, err := anyAfter(ctx, js, stream, filters, after, to)
		switch {
		case err != nil || !left:
			return nil, err
		case idle >= stallIdle:
			return nil, errStalled
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
