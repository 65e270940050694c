package decide

import (
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// Fence is what the driver knows of a partition's fence row.
type Fence struct {
	Exists bool
	// etag is the Fence's etag, as read or as the store reported it for
	// the transaction that wrote it; "" when there is no Fence.
	ETag string
	// The newest command applied to the partition.
	Seq uint64
	Cmd string
	At  time.Time
	// EraseSeq is the sequence of the partition's newest erase (SPEC §10),
	// 0 for none: every command at or below it was handled before.
	EraseSeq uint64
	// Horizon is the partition's prune horizon (projection/prune.go), carried on by
	// every Fence write.
	Horizon rows.Horizon
}

func (f Fence) String() string {
	if !f.Exists {
		return "no Fence"
	}
	return fmt.Sprintf("Fence at seq %d (cmd %s)", f.Seq, f.Cmd)
}

// op is the Fence write of a transaction that moves the Fence from f to
// next: an insert when there is none, else a replace on f's etag.
func (f Fence) Op(next Fence) store.Op {
	props := edm.Entity{
		rows.ColSeq: edm.Int64(int64(next.Seq)),
		rows.ColCmd: edm.String(next.Cmd),
		rows.ColAt:  edm.DateTime(next.At),
	}
	if next.EraseSeq > 0 {
		props[rows.ColEraseSeq] = edm.Int64(int64(next.EraseSeq))
	}
	next.Horizon.Put(props)
	if !f.Exists {
		return store.Op{Kind: store.Insert, RK: rows.FenceKey, Props: props}
	}
	return store.Op{Kind: store.Replace, RK: rows.FenceKey, Props: props, IfMatch: f.ETag}
}

// fenceWireCost is what the Fence write adds to a transaction's body, kept
// free in every batch (see batch.add).
var fenceWireCost = wireCost(edm.EntitySize("", rows.FenceKey, edm.Entity{
	rows.ColSeq: edm.Int64(0), rows.ColCmd: edm.String(string(make([]byte, events.MaxIDLen))),
	rows.ColAt: edm.DateTime(time.Time{}), rows.ColEraseSeq: edm.Int64(0),
	rows.ColPruneSeq: edm.Int64(0), rows.ColPruneCmd: edm.String(string(make([]byte, events.MaxIDLen))),
	rows.ColPruneRemoved: edm.Int64(0), rows.ColPruneTotal: edm.Int64(0),
}), nil) + 2*events.MaxKeyBytes // the partition key, in the body and the URL

// DecodeFence reads a partition's fence row; a row there that the
// projector did not write is a *rows.ForeignRowError (rows.ErrForeignRow).
func DecodeFence(e store.Entity) (Fence, error) {
	s, ok1 := e.Props[rows.ColSeq]
	c, ok2 := e.Props[rows.ColCmd]
	a, ok3 := e.Props[rows.ColAt]
	if !ok1 || !ok2 || !ok3 || s.Type != edm.TypeInt64 || c.Type != edm.TypeString {
		return Fence{}, &rows.ForeignRowError{PK: e.PK, Key: e.RK, Why: "is a fence row that lacks its columns"}
	}
	f := Fence{Exists: true, ETag: e.ETag, Seq: uint64(s.Int), Cmd: c.Str, At: a.Time, Horizon: rows.HorizonOf(e.Props)}
	if es, ok := e.Props[rows.ColEraseSeq]; ok && es.Type == edm.TypeInt64 {
		f.EraseSeq = uint64(es.Int)
	}
	return f, nil
}
