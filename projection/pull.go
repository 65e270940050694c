package projection

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// puller keeps one continuous pull on a shard's consumer (jetstream's
// Messages iterator) instead of one Fetch request per batch. Its inbox stays
// subscribed from one pull request to the next, so a message the server
// sends just as a request expires is still received. With a Fetch per batch
// such a message went to a closed inbox whenever the client gave up a
// request before the server's delivery reached it (a stall of a tenth of a
// second on a loaded host was enough), which showed as lost deliveries: a
// consumer recreation and a warning, dozens of them in a load of 60,000
// commands at 3,000 a second (issue 8, item 9).
type puller struct {
	p  *Projector
	it jetstream.MessagesContext
}

// newPuller starts the pull. It asks for up to FetchBytes at a time; on a
// replicated journal without the byte limit: a replicated consumer ends a
// byte-limited request with a status that overtakes its messages
// (nats-server 2.15, consumer.replicateDeliveries), which a Fetch lost. A
// batch still keeps to FetchBatch messages and FetchBytes in next.
//
// The iterator's buffer is a channel as long as the messages it asks for;
// a message that finds it full is dropped by the client (a slow consumer),
// which the shard sees as a gap. Its own bookkeeping of what it asked for
// can lapse (a missed heartbeat resets it), so the consumer's
// MaxAckPending bounds what the server sends instead: the buffer holds
// that many messages and room for status messages besides.
func (p *Projector) newPuller(cons jetstream.Consumer) (*puller, error) {
	n := p.maxAckPending() + pullStatusRoom
	var limit jetstream.PullMessagesOpt = jetstream.PullMaxMessagesWithBytesLimit(n, p.cfg.FetchBytes)
	if p.replicated {
		limit = jetstream.PullMaxMessages(n)
	}
	it, err := cons.Messages(limit)
	if err != nil {
		return nil, err
	}
	return &puller{p: p, it: it}, nil
}

// maxAckPending is the consumer's limit of unacknowledged deliveries: a
// batch being applied and the next one, pulled meanwhile.
func (p *Projector) maxAckPending() int { return 2 * p.cfg.FetchBatch }

// pullStatusRoom is the room in the pull's buffer for heartbeats and the
// statuses that end pull requests.
const pullStatusRoom = 64

// stop ends the pull; a nil puller is stopped.
func (pl *puller) stop() {
	if pl != nil {
		pl.it.Stop()
	}
}

// next waits up to wait for one message, then takes as many of the
// messages already waiting behind it as a batch holds (FetchBatch messages,
// FetchBytes after the first), so latency stays low when idle and batches
// grow under load. The first message's metadata says how many wait. No
// message within wait is not an error: it returns none.
func (pl *puller) next(ctx context.Context, wait time.Duration, wake <-chan struct{}) ([]jetstream.Msg, error) {
	first, err := pl.take(ctx, wait, wake)
	if err != nil || first == nil {
		return nil, err
	}
	msgs := []jetstream.Msg{first}
	md, err := first.Metadata()
	if err != nil || md.NumPending == 0 || pl.p.cfg.FetchBatch <= 1 {
		return msgs, nil
	}
	n := min(uint64(pl.p.cfg.FetchBatch-1), md.NumPending)
	size := len(first.Subject()) + len(first.Data())
	// The messages are there (or on their way): restWait only bounds a
	// stream trimmed meanwhile, for the rest as a whole (one timer per
	// batch, not one per message).
	rest, cancel := context.WithTimeout(ctx, restWait)
	defer cancel()
	next := jetstream.NextContext(rest)
	for uint64(len(msgs)-1) < n && size < pl.p.cfg.FetchBytes {
		m, err := pl.wait(ctx, next)
		if err != nil || m == nil {
			// What arrived is applied; a delivery lost in transit shows as
			// a gap in the consumer sequence, and the next call meets the
			// error again or finds it was transient.
			if err != nil && ctx.Err() == nil {
				pl.p.log.Warn("pulling the rest of a batch failed; applying what arrived", LogSeq, md.Sequence.Stream, "got", len(msgs), "err", err)
			}
			break
		}
		msgs = append(msgs, m)
		size += len(m.Subject()) + len(m.Data())
	}
	return msgs, nil
}

// restWait bounds the wait for the rest of a batch, which the first
// message's metadata says is there. It must not be short: a loaded server
// can take more than a tenth of a second for a thousand messages; what
// arrived within it is applied, the rest comes in the next batch.
const restWait = 5 * time.Second

// take returns the next message, or nil when none came within wait or
// before wake was closed (nil: never).
func (pl *puller) take(ctx context.Context, wait time.Duration, wake <-chan struct{}) (jetstream.Msg, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if wake != nil {
		go func() {
			select {
			case <-wake:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	return pl.wait(ctx, jetstream.NextContext(wctx))
}

// wait returns the next message, or nil when next's context expired first.
func (pl *puller) wait(ctx context.Context, next jetstream.NextOpt) (jetstream.Msg, error) {
	m, err := pl.it.Next(next)
	switch {
	case err == nil:
		return m, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil, nil // the wait ended, not ctx
	}
	return nil, err
}
