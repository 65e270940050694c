package projection

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// tailCheckEvery is how often an idle shard asks its consumer whether it
// delivered messages that never arrived. A delivery lost in transit (a
// JetStream leader change, a dropped connection) shows as a gap in the
// consumer's delivery sequence only when a later message arrives; at the
// tail of a shard nothing does, and the lost messages would come back only
// after the ack wait (minutes). The check costs one consumer-info request
// per idle shard every tailCheckEvery.
const tailCheckEvery = 2 * time.Second

// tailGrace is how long an idle shard waits for deliveries its consumer
// made and it has not received before it calls them lost, once something
// that loses deliveries happened (see tailWatch.check).
const tailGrace = time.Second

// tailLostAfter is how long deliveries the consumer made may be missing,
// with nothing at all arriving, before they are called lost when nothing
// that loses deliveries was seen. A delivery is counted when the server
// queues it, not when it reaches the client: a server busy storing a bulk
// load (an fsync per publish) sends what it queued seconds later, which a
// one-second grace took for losses (issue 36, item 8).
const tailLostAfter = 6 * time.Second

// tailWatch remembers what a shard's consumer looked like when it was
// opened, and when it was last checked.
type tailWatch struct {
	created time.Time
	checked time.Time
	// leader and reconnects as of the last check that found nothing
	// missing (or the opening): a change since means deliveries may have
	// been lost with the connection or the consumer's leader.
	leader     string
	reconnects uint64
	// missingSince is when deliveries were first found missing while
	// received stood at missingAt; zero while nothing is missing.
	missingSince time.Time
	missingAt    uint64
}

func newTailWatch(cons jetstream.Consumer, reconnects uint64) tailWatch {
	info := cons.CachedInfo()
	return tailWatch{created: info.Created, checked: time.Now(), leader: leaderOf(info), reconnects: reconnects}
}

func leaderOf(info *jetstream.ConsumerInfo) string {
	if info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

// due reports whether an idle shard should check its consumer now.
func (w *tailWatch) due() bool { return time.Since(w.checked) >= tailCheckEvery }

// tailState is what an idle shard's consumer says of it.
type tailState struct {
	// beyond counts deliveries made after the last one that arrived.
	beyond uint64
	// lost: the deliveries beyond are lost, not on their way: the client
	// reconnected or the consumer's leader changed since nothing was
	// missing, or nothing arrived for tailLostAfter.
	lost bool
	// waiting counts messages not delivered while the server holds no
	// pull request of the shard: its pull was lost (a leader change of a
	// replicated consumer, a reconnect) and nothing will come.
	waiting uint64
	// replaced: it is not the consumer the shard opened (another process
	// replaced it, so its delivery sequence says nothing of this run).
	replaced bool
}

// check asks the consumer about an idle shard, whose last delivery to
// arrive had delivery sequence received; reconnects is the client
// connection's reconnect count.
func (w *tailWatch) check(ctx context.Context, cons jetstream.Consumer, received, reconnects uint64) (tailState, error) {
	w.checked = time.Now()
	info, err := cons.Info(ctx)
	if err != nil {
		return tailState{}, err
	}
	var st tailState
	switch {
	case !info.Created.Equal(w.created):
		st.replaced = true
	case info.Delivered.Consumer > received:
		st.beyond = info.Delivered.Consumer - received
		if w.missingSince.IsZero() || w.missingAt != received {
			w.missingSince, w.missingAt = w.checked, received
		}
		st.lost = reconnects != w.reconnects || leaderOf(info) != w.leader || w.checked.Sub(w.missingSince) >= tailLostAfter
		return st, nil
	case info.NumPending > 0 && info.NumWaiting == 0:
		st.waiting = info.NumPending
	}
	w.missingSince, w.leader, w.reconnects = time.Time{}, leaderOf(info), reconnects
	return st, nil
}
