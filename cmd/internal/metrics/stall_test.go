package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
)

// stallingStore wraps a real store whose Get hangs until release is
// closed (a store that does not answer: the SDK retrying a refused
// connection inside one call), or fails with err when err is set.
type stallingStore struct {
	store.Store
	release chan struct{}
	err     error
}

func (s *stallingStore) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	if s.err != nil {
		return store.Entity{}, s.err
	}
	<-s.release
	return s.Store.Get(ctx, table, pk, rk)
}

// TestReadinessStoreStall: readiness drops once the store has been asked
// and has not answered for 5 s, whether the request hangs or failed
// without an answer (refused: ErrBusy), and comes back with the next
// answer. Before, it held for 30 s after the last answer.
func TestReadinessStoreStall(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"hung", nil},
		{"refused", fmt.Errorf("dial tcp: connection refused: %w", store.ErrBusy)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m, c := newTestMetrics()
			stall := &stallingStore{Store: projectiontest.Backends(azuriteSrv.ConnectionString())[0].Open(t),
				release: make(chan struct{}), err: tc.err}
			s := m.Store(stall)
			ready := m.StoreCheck(storeStall, storeAnswer)
			if err := s.CreateTable(ctx, "stalled"); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() { _, err := s.Get(ctx, "stalled", "p", "r"); got <- err }()
			if tc.err != nil {
				if err := <-got; !errors.Is(err, store.ErrBusy) {
					t.Fatalf("get: %v", err)
				}
			}
			for m.st.askedSince.Load() == 0 { // the request is on its way
				select {
				case <-ctx.Done():
					t.Fatal("the request never started")
				case <-time.After(time.Millisecond):
				}
			}
			c.add(storeStall - time.Second)
			if err := ready.Check(); err != nil {
				t.Errorf("readiness %s into the request: %v", storeStall-time.Second, err)
			}
			c.add(time.Second)
			if err := ready.Check(); err == nil || !strings.Contains(err.Error(), "not answered for 5s while asked") {
				t.Errorf("readiness %s into the request: %v, want not ready", storeStall, err)
			}
			close(stall.release)
			if tc.err == nil {
				if err := <-got; !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("get: %v", err)
				}
			} else if _, err := s.ListTables(ctx); err != nil {
				t.Fatal(err)
			}
			if err := ready.Check(); err != nil {
				t.Errorf("readiness once the store answered: %v", err)
			}
		})
	}
}
