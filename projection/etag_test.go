package projection_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// fenceReads counts point reads of fence rows.
type fenceReads struct {
	store.Store
	n atomic.Int64
}

func (f *fenceReads) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	if rk == rows.FenceKey {
		f.n.Add(1)
	}
	return f.Store.Get(ctx, table, pk, rk)
}

// TestFenceETagFromCommit: every store's transactions report the etag of
// each entity written (store.Store.Transact), so the applier commits the
// next batch of a partition on the fence's etag from the last commit,
// without reading the fence back.
func TestFenceETagFromCommit(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			st := &fenceReads{Store: b.Ordered(t)}
			a := projection.NewApplier(st, projection.ApplierConfig{})
			for i := range 3 {
				seq := uint64(i + 1)
				id := fmt.Sprintf("c%d", seq)
				e := projection.Entry{Seq: seq, At: time.Unix(int64(seq), 0).UTC(), ID: id, Cmd: &events.Command{ID: id, Table: "orders", PK: "p",
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int32(int32(i))}}}}}
				if err := a.Apply(ctx, "orders", "p", []projection.Entry{e}, projection.Hooks{}); err != nil {
					t.Fatal(err)
				}
			}
			// The first batch reads the fence (there is none) once.
			if got := st.n.Load(); got != 1 {
				t.Errorf("%d reads of the fence over 3 batches, want 1", got)
			}
		})
	}
}
