package projection_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// callLog wraps a real store and records the order of its reads and
// transactions among the hooks' calls.
type callLog struct {
	store.Store
	mu    sync.Mutex
	calls []string
}

func (c *callLog) add(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

func (c *callLog) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	c.add("read")
	return c.Store.Get(ctx, table, pk, rk)
}

func (c *callLog) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	c.add("read")
	return c.Store.Query(ctx, table, q)
}

func (c *callLog) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	c.add("tx")
	return c.Store.Transact(ctx, table, pk, ops)
}

// compact drops repeated calls: "read read ready tx" is "read ready tx".
func (c *callLog) compact() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Compact(slices.Clone(c.calls))
}

var errLookupDown = errors.New("injected: outcome look-up failed")

// TestReadyHook: Apply calls Hooks.Ready once, after the partition's rows
// are read and before anything is decided, so the projector's outcome
// look-up overlaps the row reads; what Ready sets on the entries decides
// them, and an error from it stops the partition before anything is
// written.
func TestReadyHook(t *testing.T) {
	upsert := func(seq uint64, id string) projection.Entry {
		return projection.Entry{Seq: seq, At: time.Unix(int64(seq), 0).UTC(), ID: id, Cmd: &events.Command{ID: id, Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int32(int32(seq))}}}}}
	}
	bad := projection.Entry{Seq: 1, At: time.Unix(1, 0).UTC(), ID: "bad", Err: errors.New("does not decode")}
	tests := []struct {
		name    string
		entries []projection.Entry
		// ready is what the Ready hook does to the entries.
		ready     func([]projection.Entry) error
		wantErr   error
		want      []wire.Status
		wantCalls []string
	}{
		{
			name:      "reads, then ready, then the commit",
			entries:   []projection.Entry{upsert(5, "a")},
			ready:     func([]projection.Entry) error { return nil },
			want:      []wire.Status{wire.StatusApplied},
			wantCalls: []string{"read", "ready", "tx"},
		},
		{
			name:    "a prior set by ready makes a duplicate",
			entries: []projection.Entry{upsert(5, "a")},
			ready: func(es []projection.Entry) error {
				es[0].Prior = projection.Prior{Seq: 2, Status: wire.StatusApplied}
				return nil
			},
			want:      []wire.Status{wire.StatusDuplicate},
			wantCalls: []string{"read", "ready"}, // it writes nothing
		},
		{
			name:      "ready fails: nothing decided or written",
			entries:   []projection.Entry{upsert(5, "a")},
			ready:     func([]projection.Entry) error { return errLookupDown },
			wantErr:   errLookupDown,
			wantCalls: []string{"read", "ready"},
		},
		{
			name:      "once for several transactions",
			entries:   []projection.Entry{bad, upsert(5, "a")},
			ready:     func([]projection.Entry) error { return nil },
			want:      []wire.Status{wire.StatusRejected, wire.StatusApplied},
			wantCalls: []string{"ready", "read", "tx"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := &callLog{Store: projectiontest.SQLite(t)}
			a := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
			var got []wire.Status
			keep := func(_ context.Context, rs []projection.Result) error {
				for _, r := range rs {
					got = append(got, r.Status)
				}
				return nil
			}
			es := slices.Clone(tt.entries)
			readies := 0
			err := a.Apply(ctx, "orders", "p", es, projection.Hooks{
				Ready: func(context.Context) error {
					readies++
					st.add("ready")
					return tt.ready(es)
				},
				BeforeCommit: keep,
				AfterCommit:  keep,
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Apply: %v, want %v", err, tt.wantErr)
			}
			if readies != 1 {
				t.Errorf("Ready called %d times, want once", readies)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("results %v, want %v", got, tt.want)
			}
			// CreateTable is not logged; the table's first read is.
			if calls := st.compact(); !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("calls %v, want %v", calls, tt.wantCalls)
			}
		})
	}
}
