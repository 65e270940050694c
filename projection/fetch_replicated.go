package projection

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Chunk bounds of fetchReplicated: the first chunk is small until the
// sizes of a few messages are known.
const (
	firstChunk = 32
	maxChunk   = 256
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

// fetchReplicated fetches up to n more messages after msgs from a
// replicated consumer, in chunks without a byte limit, until their bytes
// reach FetchBytes.
//
// A replicated consumer sends a delivered message only once its delivered
// state has a quorum, but the status that ends a pull request with a byte
// limit ("409 Batch Completed", "409 Message Size Exceeds MaxBytes") at
// once (nats-server 2.15.2, consumer.replicateDeliveries): the status
// overtakes the messages, the client ends the fetch on it, and the messages
// arrive to a closed inbox, lost. A request without a byte limit ends when
// its count is delivered, with no status. So the byte bound is kept here:
// each chunk asks for as many messages as the bytes left allow at the
// average size so far, so a batch can overshoot FetchBytes by at most one
// chunk.
func (p *Projector) fetchReplicated(cons jetstream.Consumer, msgs []jetstream.Msg, n int) []jetstream.Msg {
	size := 0
	for _, m := range msgs {
		size += len(m.Subject()) + len(m.Data())
	}
	limit := firstChunk
	for n > 0 && size < p.cfg.FetchBytes {
		avg := max(size/len(msgs), 1)
		k := min(n, limit, max(1, (p.cfg.FetchBytes-size)/avg))
		batch, err := cons.Fetch(k, jetstream.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			p.log.Warn("fetching the rest of a batch failed; applying what arrived", "got", len(msgs), "err", err)
			return msgs
		}
		got := 0
		for m := range batch.Messages() {
			msgs = append(msgs, m)
			size += len(m.Subject()) + len(m.Data())
			got++
		}
		if err := batch.Error(); err != nil && !fetchExpired(err) {
			p.log.Warn("fetching the rest of a batch failed; applying what arrived", "got", len(msgs), "err", err)
			return msgs
		}
		if got < k {
			return msgs // fewer waiting than the first message said (a trimmed stream)
		}
		n -= got
		limit = maxChunk
	}
	return msgs
}
