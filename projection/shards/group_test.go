package shards_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/projection/shards"
)

// tracker records which instance runs a worker for which shard, and fails
// the test if two run one shard at once.
type tracker struct {
	t       *testing.T
	mu      sync.Mutex
	running map[int]string
}

func (tr *tracker) worker(id string) shards.Worker {
	return func(ctx context.Context, shard int) error {
		tr.mu.Lock()
		if other, ok := tr.running[shard]; ok {
			tr.t.Errorf("shard %d: %s starts while %s still runs it", shard, id, other)
		}
		tr.running[shard] = id
		tr.mu.Unlock()
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // the in-flight batch
		tr.mu.Lock()
		delete(tr.running, shard)
		tr.mu.Unlock()
		return nil
	}
}

// counts returns how many shards each instance runs.
func (tr *tracker) counts() map[string]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	c := make(map[string]int)
	for _, id := range tr.running {
		c[id]++
	}
	return c
}

type member struct {
	g      *shards.Group
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan error
}

func startMember(t *testing.T, url, id string, tr *tracker, cfg shards.Config) *member {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.InstanceID = id
	cfg.Logger = projectiontest.QuietLogger()
	g, err := shards.Join(journaltest.Context(t, 10*time.Second), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{g: g, nc: nc, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- g.Run(ctx, tr.worker(id)) }()
	t.Cleanup(func() { cancel(); <-m.done })
	return m
}

func (m *member) stop(t *testing.T) {
	t.Helper()
	m.cancel()
	if err := <-m.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	m.done <- nil // for the cleanup
}

func waitBalanced(t *testing.T, ctx context.Context, tr *tracker, ids []string, shardCount int) time.Duration {
	t.Helper()
	start := time.Now()
	projectiontest.WaitFor(t, ctx, fmt.Sprintf("%d shards balanced over %v", shardCount, ids), func() (bool, error) {
		c := tr.counts()
		total, lo, hi := 0, shardCount, 0
		for _, id := range ids {
			total += c[id]
			lo, hi = min(lo, c[id]), max(hi, c[id])
		}
		return total == shardCount && len(c) == len(ids) && hi-lo <= 1, fmt.Errorf("running %v", c)
	})
	return time.Since(start)
}

// TestGroup: three instances share 16 shards 6/5/5, a fourth gets its share
// by handoff, one that stops releases its shards to the others at once, and
// the shards of one cut off from NATS (as good as killed) are taken over
// once its leases expire. No shard ever runs on two instances at once.
func TestGroup(t *testing.T) {
	srv := journaltest.StartServer(t)
	ctx := journaltest.Context(t, 2*time.Minute)
	tr := &tracker{t: t, running: make(map[int]string)}
	cfg := shards.Config{Shards: 16, LeaseTTL: 2 * time.Second}

	a := startMember(t, srv.ClientURL(), "a", tr, cfg)
	waitBalanced(t, ctx, tr, []string{"a"}, 16)
	b := startMember(t, srv.ClientURL(), "b", tr, cfg)
	c := startMember(t, srv.ClientURL(), "c", tr, cfg)
	t.Logf("3 instances balanced in %s", waitBalanced(t, ctx, tr, []string{"a", "b", "c"}, 16))

	d := startMember(t, srv.ClientURL(), "d", tr, cfg)
	took := waitBalanced(t, ctx, tr, []string{"a", "b", "c", "d"}, 16)
	t.Logf("a fourth got its share by handoff in %s", took)
	if took > 5*time.Second {
		t.Errorf("handoff to a new instance took %s", took)
	}

	d.stop(t)
	took = waitBalanced(t, ctx, tr, []string{"a", "b", "c"}, 16)
	t.Logf("a stopped instance's shards moved in %s", took)
	if took > 2*time.Second {
		t.Errorf("release on stop took %s, want well under the lease TTL", took)
	}

	// Cut c off: its leases expire and the others take its shards. Its own
	// workers stop (fenced) before the leases can expire.
	c.nc.Close()
	took = waitBalanced(t, ctx, tr, []string{"a", "b"}, 16)
	t.Logf("a dead instance's shards were taken over in %s (lease TTL %s)", took, cfg.LeaseTTL)
	if took > 3*cfg.LeaseTTL {
		t.Errorf("takeover took %s", took)
	}
	for _, sh := range c.g.Owned() {
		t.Errorf("cut-off instance still reports shard %d", sh)
	}
	_ = a
	_ = b
}

// TestConfirm: the owner confirms its lease and gets its epoch; an instance
// that lost it (its lease taken after it expired) gets ErrNotOwner.
func TestConfirm(t *testing.T) {
	srv := journaltest.StartServer(t)
	ctx := journaltest.Context(t, time.Minute)
	tr := &tracker{t: t, running: make(map[int]string)}
	a := startMember(t, srv.ClientURL(), "a", tr, shards.Config{Shards: 2, LeaseTTL: 2 * time.Second})
	waitBalanced(t, ctx, tr, []string{"a"}, 2)
	epoch, err := a.g.Confirm(ctx, 1)
	if err != nil || epoch == 0 {
		t.Fatalf("Confirm = %d, %v", epoch, err)
	}
	_, js := journaltest.Connect(t, srv.ClientURL())
	kv, err := js.KeyValue(ctx, shards.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, shards.ShardKey(1))
	if err != nil {
		t.Fatal(err)
	}
	var l shards.Lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		t.Fatal(err)
	}
	if l.Owner != "a" || l.Epoch != epoch || l.Since.IsZero() || !strings.Contains(string(e.Value()), `"since":"`) {
		t.Fatalf("lease %s, want owner a, epoch %d", e.Value(), epoch)
	}
	// Someone else overwrites it (as if it had expired and been claimed).
	if _, err := kv.Put(ctx, shards.ShardKey(1), []byte(`{"owner":"z"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.g.Confirm(ctx, 1); !errors.Is(err, shards.ErrNotOwner) {
		t.Fatalf("Confirm after loss: %v, want ErrNotOwner", err)
	}
	projectiontest.WaitFor(t, ctx, "the worker of the lost shard stops", func() (bool, error) {
		c := tr.counts()
		return c["a"] == 1, fmt.Errorf("running %v", c)
	})
	if got := a.g.Owned(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("Owned = %v, want [0]", got)
	}
}

// slowAnswerKV wraps the real ownership bucket: a lease's Create reaches
// the server at once, but its answer comes back only after stopBegun is
// closed, as under load when the instance is told to stop while its claim
// is in flight. A caller that gave up waiting by then gets its context's
// error, as from the real client.
type slowAnswerKV struct {
	jetstream.KeyValue
	entered   chan struct{} // closed by the first lease Create
	stopBegun chan struct{}

	mu             sync.Mutex
	once           sync.Once
	afterStopBegun int // lease Creates called once stopBegun was closed
}

func (kv *slowAnswerKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if !strings.HasPrefix(key, shards.ShardKeyPrefix) {
		return kv.KeyValue.Create(ctx, key, value, opts...)
	}
	select {
	case <-kv.stopBegun:
		kv.mu.Lock()
		kv.afterStopBegun++
		kv.mu.Unlock()
	default:
	}
	rev, err := kv.KeyValue.Create(context.WithoutCancel(ctx), key, value, opts...)
	kv.once.Do(func() { close(kv.entered) })
	<-kv.stopBegun
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return rev, err
}

// leasesLeft returns the shards whose lease key holds a lease.
func leasesLeft(t *testing.T, ctx context.Context, kv jetstream.KeyValue, n int) []string {
	t.Helper()
	var left []string
	for sh := range n {
		e, err := kv.Get(ctx, shards.ShardKey(sh))
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		case err != nil:
			t.Fatal(err)
		default:
			left = append(left, fmt.Sprintf("%d: %s", sh, e.Value()))
		}
	}
	return left
}

func joinTest(t *testing.T, ctx context.Context, url string, cfg shards.Config) (*shards.Group, jetstream.KeyValue) {
	t.Helper()
	_, js := journaltest.Connect(t, url)
	cfg.InstanceID, cfg.Logger = "a", projectiontest.QuietLogger()
	g, err := shards.Join(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, shards.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	return g, kv
}

func idle(ctx context.Context, _ int) error { <-ctx.Done(); return nil }

// waitRun waits for Run, told to stop, to return nil.
func waitRun(t *testing.T, ctx context.Context, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return")
	}
}

// TestStopDuringClaim: an instance told to stop while its claim of a shard
// is in flight (the lease stored, its answer not yet back) leaves no lease
// behind when Run returns, and claims nothing once the stop began. The
// lease TTL is long, so a lease left would still be there.
func TestStopDuringClaim(t *testing.T) {
	srv := journaltest.StartServer(t)
	ctx := journaltest.Context(t, time.Minute)
	g, kv := joinTest(t, ctx, srv.ClientURL(), shards.Config{Shards: 4, LeaseTTL: 30 * time.Second})
	slow := &slowAnswerKV{entered: make(chan struct{}), stopBegun: make(chan struct{})}
	shards.WrapKV(g, func(kv jetstream.KeyValue) jetstream.KeyValue { slow.KeyValue = kv; return slow })

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx, idle) }()
	select {
	case <-slow.entered:
	case <-ctx.Done():
		t.Fatal("no shard was claimed")
	}
	stop()
	close(slow.stopBegun)
	waitRun(t, ctx, done)
	if left := leasesLeft(t, ctx, kv, 4); len(left) > 0 {
		t.Errorf("leases left after the instance stopped: %v", left)
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if slow.afterStopBegun > 0 {
		t.Errorf("%d claims after the stop began", slow.afterStopBegun)
	}
}

// TestReleaseAfterUnansweredRenewal: a renewal that was stored though its
// answer never came (here: the lease rewritten as it was) leaves the
// keeper with an older revision; stopping still releases the lease.
func TestReleaseAfterUnansweredRenewal(t *testing.T) {
	srv := journaltest.StartServer(t)
	ctx := journaltest.Context(t, time.Minute)
	g, kv := joinTest(t, ctx, srv.ClientURL(), shards.Config{Shards: 1, LeaseTTL: 30 * time.Second})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx, idle) }()
	projectiontest.WaitFor(t, ctx, "shard 0 owned", func() (bool, error) {
		return len(g.Owned()) == 1, fmt.Errorf("owned %v", g.Owned())
	})
	e, err := kv.Get(ctx, shards.ShardKey(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, shards.ShardKey(0), e.Value(), e.Revision()); err != nil {
		t.Fatal(err)
	}
	stop()
	waitRun(t, ctx, done)
	if left := leasesLeft(t, ctx, kv, 1); len(left) > 0 {
		t.Errorf("leases left after the instance stopped: %v", left)
	}
}
