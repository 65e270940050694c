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

// check asks the consumer how many deliveries it made beyond received
// (the delivery sequence of the last message that arrived), and whether it
// is still the consumer the shard opened (another process may have
// replaced it, and then its delivery sequence says nothing about this
// shard's run).
func (w *tailWatch) check(ctx context.Context, cons jetstream.Consumer, received uint64) (beyond uint64, replaced bool, err error) {
	w.checked = time.Now()
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, false, err
	}
	if !info.Created.Equal(w.created) {
		return 0, true, nil
	}
	if info.Delivered.Consumer > received {
		return info.Delivered.Consumer - received, false, nil
	}
	return 0, false, nil
}
