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
// made and it has not received before it calls them lost.
const tailGrace = time.Second

// tailWatch remembers what a shard's consumer looked like when it was
// opened, and when it was last checked.
type tailWatch struct {
	created time.Time
	checked time.Time
}

func newTailWatch(cons jetstream.Consumer) tailWatch {
	return tailWatch{created: cons.CachedInfo().Created, checked: time.Now()}
}

// due reports whether an idle shard should check its consumer now.
func (w *tailWatch) due() bool { return time.Since(w.checked) >= tailCheckEvery }

// tailState is what an idle shard's consumer says of it.
type tailState struct {
	// beyond counts deliveries made after the last one that arrived.
	beyond uint64
	// waiting counts messages not delivered while the server holds no
	// pull request of the shard: its pull was lost (a leader change of a
	// replicated consumer, a reconnect) and nothing will come.
	waiting uint64
	// replaced: it is not the consumer the shard opened (another process
	// replaced it, so its delivery sequence says nothing of this run).
	replaced bool
}

// check asks the consumer about an idle shard, whose last delivery to
// arrive had delivery sequence received.
func (w *tailWatch) check(ctx context.Context, cons jetstream.Consumer, received uint64) (tailState, error) {
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
	case info.NumPending > 0 && info.NumWaiting == 0:
		st.waiting = info.NumPending
	}
	return st, nil
}
