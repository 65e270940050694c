package projection_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
)

// faultStore wraps a real store to inject what a real server cannot be made
// to do on demand: transient failures, a transaction that committed but was
// reported as failed (an HTTP 5xx or a timeout after the commit), and a
// persistent failure.
type faultStore struct {
	store.Store

	mu              sync.Mutex
	rng             *rand.Rand
	busy, ambiguous int // percent of transactions
	readBusy        int // percent of reads
	persistentAfter int // transactions before every one fails; 0 never
	calls           int
	injected        map[string]int
}

var errDiskOnFire = errors.New("injected: disk on fire")

func newFaultStore(s store.Store, seed uint64) *faultStore {
	return &faultStore{Store: s, rng: rand.New(rand.NewPCG(seed, seed)), injected: map[string]int{}}
}

func (f *faultStore) roll(pct int) bool { return pct > 0 && f.rng.IntN(100) < pct }

func (f *faultStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	f.mu.Lock()
	f.calls++
	var fault string
	switch {
	case f.persistentAfter > 0 && f.calls > f.persistentAfter:
		fault = "persistent"
	case f.roll(f.busy):
		fault = "busy"
	case f.roll(f.ambiguous):
		fault = "ambiguous"
	}
	f.injected[fault]++
	f.mu.Unlock()
	switch fault {
	case "persistent":
		return nil, errDiskOnFire
	case "busy":
		return nil, store.ErrBusy
	case "ambiguous":
		if _, err := f.Store.Transact(ctx, table, pk, ops); err != nil {
			return nil, err
		}
		return nil, store.ErrBusy
	}
	return f.Store.Transact(ctx, table, pk, ops)
}

func (f *faultStore) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	if f.readFault() {
		return store.Entity{}, store.ErrBusy
	}
	return f.Store.Get(ctx, table, pk, rk)
}

func (f *faultStore) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	if f.readFault() {
		return store.Page{}, store.ErrBusy
	}
	return f.Store.Query(ctx, table, q)
}

func (f *faultStore) readFault() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	busy := f.roll(f.readBusy)
	if busy {
		f.injected["read-busy"]++
	}
	return busy
}

func (f *faultStore) count(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[kind]
}

func workload(seed uint64, n int) []*events.Command {
	w := projectiontest.NewWorkload(seed, "orders", 20, 10)
	cmds := make([]*events.Command, n)
	for i := range cmds {
		cmds[i] = w.Next()
	}
	return cmds
}

// TestStoreFaults: transient store errors and transactions that committed
// but reported failure are retried; the result equals the model.
func TestStoreFaults(t *testing.T) {
	ctx := journaltest.Context(t, 5*time.Minute)
	fs := newFaultStore(projectiontest.SQLite(t), 5)
	fs.busy, fs.ambiguous, fs.readBusy = 10, 10, 5
	h := projectiontest.Start(t, fs, projectiontest.Options{})
	// No cache: every batch reads its rows, so read faults land too. Small
	// fetches make many transactions.
	h.StartProjector(projection.Config{FetchBatch: 16, Applier: projection.ApplierConfig{CacheRows: -1}})
	h.PublishAll(ctx, workload(99, 2000))
	h.WaitProjected(ctx)

	model := h.Model(ctx)
	projectiontest.CompareTable(t, fs.Store, "orders", model)
	checkOutcomesStatusOnly(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)
	for _, kind := range []string{"busy", "ambiguous", "read-busy"} {
		if fs.count(kind) == 0 {
			t.Errorf("no %s fault was injected", kind)
		}
	}
	t.Logf("faults injected: %v", fs.injected)
}

// TestPersistentStoreFailure: a store that keeps failing stops the
// projector with an error instead of skipping commands; a projector started
// afterwards on a healthy store finishes the journal and the result equals
// the model.
func TestPersistentStoreFailure(t *testing.T) {
	ctx := journaltest.Context(t, 5*time.Minute)
	healthy := projectiontest.SQLite(t)
	fs := newFaultStore(healthy, 6)
	fs.persistentAfter = 5
	h := projectiontest.Start(t, healthy, projectiontest.Options{})
	h.PublishAll(ctx, workload(100, 1500))

	runUntilDiskOnFire(t, ctx, h, fs, projection.Config{})

	h.StartProjector(projection.Config{}) // on the healthy store
	h.WaitProjected(ctx)
	model := h.Model(ctx)
	projectiontest.CompareTable(t, healthy, "orders", model)
	checkOutcomesStatusOnly(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)
}

// runUntilDiskOnFire runs a projector of h's journal on st, with cfg and a
// short MaxRetry, and waits until it stops on errDiskOnFire.
func runUntilDiskOnFire(t *testing.T, ctx context.Context, h *projectiontest.Harness, st store.Store, cfg projection.Config) {
	t.Helper()
	cfg.Applier.MaxRetry, cfg.Logger = 200*time.Millisecond, projectiontest.QuietLogger()
	p, err := projection.New(ctx, h.JS, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, errDiskOnFire) {
			t.Fatalf("Run returned %v, want the store's persistent error", err)
		}
	case <-ctx.Done():
		t.Fatal("the projector kept running on a failing store")
	}
}

// TestStopDuringStoreOutage: a projector stopped while its batch waits out
// a store that answers nothing but "busy" returns within its DrainTimeout,
// leaving the batch unacknowledged and saying so; a projector started once
// the store is back applies it, and the result equals the model.
func TestStopDuringStoreOutage(t *testing.T) {
	ctx := journaltest.Context(t, 3*time.Minute)
	fs := newFaultStore(projectiontest.SQLite(t), 7)
	h := projectiontest.Start(t, fs, projectiontest.Options{})
	var logs projectiontest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h.StartProjector(projection.Config{DrainTimeout: 500 * time.Millisecond, Logger: log})

	setBusy := func(pct int) {
		fs.mu.Lock()
		fs.busy, fs.readBusy = pct, pct
		fs.mu.Unlock()
	}
	// Each shard checks its partitions against the store when it starts
	// (behind.go): a first command applied on the healthy store shows the
	// check done, so the outage below meets a fetched batch.
	cmds := workload(101, 50)
	h.PublishAll(ctx, cmds[:1])
	h.WaitProjected(ctx)
	setBusy(100)
	h.PublishAll(ctx, cmds[1:])
	projectiontest.WaitFor(t, ctx, "the store outage warning", func() (bool, error) {
		return strings.Contains(logs.String(), outageWarning), nil
	})
	projectiontest.WaitFor(t, ctx, "a batch in flight", func() (bool, error) {
		return batchInFlight(ctx, h)
	})

	stopped := make(chan error, 1)
	go func() { stopped <- h.StopProjector() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("the projector did not stop while the store was down")
	}
	if !strings.Contains(logs.String(), "batch abandoned unacknowledged") {
		t.Errorf("no line saying a batch was abandoned; logs:\n%s", logs.String())
	}

	setBusy(0)
	h.StartProjector(projection.Config{})
	h.WaitProjected(ctx)
	model := h.Model(ctx)
	projectiontest.CompareTable(t, fs.Store, "orders", model)
	checkOutcomesStatusOnly(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)
}

// batchInFlight reports whether any projector consumer of h's journal has
// delivered messages it has not had acknowledged.
func batchInFlight(ctx context.Context, h *projectiontest.Harness) (bool, error) {
	s, err := h.JS.Stream(ctx, h.Journal.Name())
	if err != nil {
		return false, err
	}
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		if ci.NumAckPending > 0 {
			return true, nil
		}
	}
	return false, l.Err()
}

// TestJetStreamRestart restarts the JetStream server three times while the
// projector works; it rides over each restart and the result equals the
// model.
func TestJetStreamRestart(t *testing.T) {
	ctx := journaltest.Context(t, 5*time.Minute)
	h := projectiontest.Start(t, projectiontest.SQLite(t), projectiontest.Options{})
	h.StartProjector(projection.Config{})
	cmds := workload(101, 2000)
	for i := 0; i < 4; i++ {
		h.PublishAll(ctx, cmds[i*500:(i+1)*500])
		if i < 3 {
			h.Server = journaltest.Restart(t, h.Server)
			projectiontest.WaitFor(t, ctx, "the client reconnects", func() (bool, error) {
				return h.NC.IsConnected(), nil
			})
		}
	}
	h.WaitProjected(ctx)
	model := h.Model(ctx)
	projectiontest.CompareTable(t, h.Store, "orders", model)
	checkOutcomesStatusOnly(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)
}
