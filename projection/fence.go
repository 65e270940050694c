package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// fence is what the applier knows of a partition's fence row.
type fence struct {
	exists bool
	// etag is the fence's etag, as read or as the store reported it for
	// the transaction that wrote it; "" when there is no fence.
	etag string
	// The newest command applied to the partition.
	seq uint64
	cmd string
	at  time.Time
	// eraseSeq is the sequence of the partition's newest erase (SPEC §10),
	// 0 for none: every command at or below it was handled before.
	eraseSeq uint64
	// horizon is the partition's prune horizon (prune.go), carried on by
	// every fence write.
	horizon rows.Horizon
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
	props := edm.Entity{
		rows.ColSeq: edm.Int64(int64(next.seq)),
		rows.ColCmd: edm.String(next.cmd),
		rows.ColAt:  edm.DateTime(next.at),
	}
	if next.eraseSeq > 0 {
		props[rows.ColEraseSeq] = edm.Int64(int64(next.eraseSeq))
	}
	next.horizon.Put(props)
	if !f.exists {
		return store.Op{Kind: store.Insert, RK: rows.FenceKey, Props: props}
	}
	return store.Op{Kind: store.Replace, RK: rows.FenceKey, Props: props, IfMatch: f.etag}
}

// fenceWireCost is what the fence write adds to a transaction's body, kept
// free in every batch (see batch.add).
var fenceWireCost = wireCost(edm.EntitySize("", rows.FenceKey, edm.Entity{
	rows.ColSeq: edm.Int64(0), rows.ColCmd: edm.String(string(make([]byte, events.MaxIDLen))),
	rows.ColAt: edm.DateTime(time.Time{}), rows.ColEraseSeq: edm.Int64(0),
	rows.ColPruneSeq: edm.Int64(0), rows.ColPruneCmd: edm.String(string(make([]byte, events.MaxIDLen))),
	rows.ColPruneRemoved: edm.Int64(0),
}), nil) + 2*events.MaxKeyBytes // the partition key, in the body and the URL

func decodeFence(e store.Entity) (fence, error) {
	s, ok1 := e.Props[rows.ColSeq]
	c, ok2 := e.Props[rows.ColCmd]
	a, ok3 := e.Props[rows.ColAt]
	if !ok1 || !ok2 || !ok3 || s.Type != edm.TypeInt64 || c.Type != edm.TypeString {
		return fence{}, fmt.Errorf("fence row of partition %q lacks its columns: %w", e.PK, rows.ErrLayout)
	}
	f := fence{exists: true, etag: e.ETag, seq: uint64(s.Int), cmd: c.Str, at: a.Time, horizon: rows.HorizonOf(e.Props)}
	if es, ok := e.Props[rows.ColEraseSeq]; ok && es.Type == edm.TypeInt64 {
		f.eraseSeq = uint64(es.Int)
	}
	return f, nil
}

// readFence reads a partition's fence; a missing fence (or table) is
// reported as fence{exists: false}.
func (a *Applier) readFence(ctx context.Context, table, pk string) (fence, error) {
	return retryStore(ctx, a.policy, "read the fence of "+table+"/"+pk, func() (fence, error) {
		e, err := a.store.Get(ctx, table, pk, rows.FenceKey)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
			return fence{}, nil
		case err != nil:
			return fence{}, err
		}
		return decodeFence(e)
	})
}
