package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/store"
)

// FenceKey is the RowKey of a partition's fence row. The fence is the
// projector's bookkeeping, not a logical row: it sorts outside the tip and
// version ranges of SPEC §4, so listings of current rows and histories
// never meet it. It holds the system columns _seq, _cmd and _at of the
// newest command applied to the partition, a pure function of the journal
// like every other row.
//
// Every transaction the projector commits in a partition writes the fence
// on the condition that it still has the etag the projector's view of the
// partition was taken at (an insert when there was none). So a transaction
// commits only on the state it was decided on: two projectors that apply
// one partition at the same time serialize on the fence, and the one whose
// view is stale fails, reloads and finds its commands already handled. See
// docs/ARCHITECTURE.md, "Exactly once".
const FenceKey = "fence"

// IsLayoutKey reports whether a stored RowKey is a tip or version row of
// the layout, as opposed to the partition's fence.
func IsLayoutKey(rk string) bool {
	_, _, _, ok := ParseKey(rk)
	return ok
}

// fence is what the applier knows of a partition's fence row.
type fence struct {
	exists bool
	// etag is the fence's etag; "" when unknown (after a commit on a store
	// that does not report the etags a transaction produced).
	etag string
	// The newest command applied to the partition.
	seq uint64
	cmd string
	at  time.Time
}

// sameContent reports whether f and g describe the same applied prefix.
// The fence's _seq grows with every transaction that changes a row (see
// ARCHITECTURE.md), so equal content means no row changed in between.
func (f fence) sameContent(g fence) bool {
	return f.exists == g.exists && f.seq == g.seq && f.cmd == g.cmd
}

func (f fence) String() string {
	if !f.exists {
		return "no fence"
	}
	return fmt.Sprintf("fence at seq %d (cmd %s)", f.seq, f.cmd)
}

// op is the fence write of a transaction that moves the fence from f to
// next: an insert when there is none, else a replace on f's etag.
func (f fence) op(next fence) store.Op {
	props := events.Entity{
		ColSeq: events.Int64(int64(next.seq)),
		ColCmd: events.String(next.cmd),
		ColAt:  events.DateTime(next.at),
	}
	if !f.exists {
		return store.Op{Kind: store.Insert, RK: FenceKey, Props: props}
	}
	return store.Op{Kind: store.Replace, RK: FenceKey, Props: props, IfMatch: f.etag}
}

// fenceWireCost is what the fence write adds to a transaction's body, kept
// free in every batch (see batch.add).
var fenceWireCost = wireCost(events.EntitySize("", FenceKey, events.Entity{
	ColSeq: events.Int64(0), ColCmd: events.String(string(make([]byte, events.MaxIDLen))),
	ColAt: events.DateTime(time.Time{}),
}), nil) + 2*events.MaxKeyBytes // the partition key, in the body and the URL

func decodeFence(e store.Entity) (fence, error) {
	s, ok1 := e.Props[ColSeq]
	c, ok2 := e.Props[ColCmd]
	a, ok3 := e.Props[ColAt]
	if !ok1 || !ok2 || !ok3 || s.Type != events.TypeInt64 || c.Type != events.TypeString {
		return fence{}, fmt.Errorf("fence row of partition %q lacks its columns: %w", e.PK, ErrLayout)
	}
	return fence{exists: true, etag: e.ETag, seq: uint64(s.Int), cmd: c.Str, at: a.Time}, nil
}

// readFence reads a partition's fence; a missing fence (or table) is
// reported as fence{exists: false}.
func (a *Applier) readFence(ctx context.Context, table, pk string) (fence, error) {
	return retryStore(ctx, a.policy, "read the fence of "+table+"/"+pk, func() (fence, error) {
		e, err := a.store.Get(ctx, table, pk, FenceKey)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
			return fence{}, nil
		case err != nil:
			return fence{}, err
		}
		return decodeFence(e)
	})
}
