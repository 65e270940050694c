package system_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// jitterStore wraps a real store and pauses at random before transactions
// and after reads, as a process stalled by GC or a slow network would: the
// other instance then commits between this one's reads and its writes.
type jitterStore struct {
	store.Store
	mu  sync.Mutex
	rng *rand.Rand
	pct int
	max time.Duration
}

func (j *jitterStore) pause() {
	j.mu.Lock()
	d := time.Duration(0)
	if j.rng.IntN(100) < j.pct {
		d = time.Duration(j.rng.Int64N(int64(j.max)))
	}
	j.mu.Unlock()
	time.Sleep(d)
}

func (j *jitterStore) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	defer j.pause()
	return j.Store.Get(ctx, table, pk, rk)
}

func (j *jitterStore) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	defer j.pause()
	return j.Store.Query(ctx, table, q)
}

func (j *jitterStore) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	j.pause()
	return j.Store.Transact(ctx, table, pk, ops)
}

// recordingJS records every outcome a projector publishes, before
// JetStream's deduplication keeps only the first of each journal sequence.
type recordingJS struct {
	jetstream.JetStream
	name string
	mu   sync.Mutex
	got  []wire.Outcome
	at   []time.Time // when each of got was published
	logs projectiontest.SyncBuffer
}

func (r *recordingJS) record(m *nats.Msg) {
	if !strings.HasPrefix(m.Subject, wire.OutcomesPrefix+".") {
		return
	}
	var o wire.Outcome
	if json.Unmarshal(m.Data, &o) == nil {
		r.mu.Lock()
		r.got = append(r.got, o)
		r.at = append(r.at, time.Now())
		r.mu.Unlock()
	}
}

// logger is the instance's projector log, at Debug: each transaction it
// decided and the view it decided on.
func (r *recordingJS) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// explain logs what the instance published in partition pk for journal
// sequences up to upto, and what it decided there, to read when one of its
// outcomes is wrong.
func (r *recordingJS) explain(t *testing.T, pk string, upto uint64) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "instance %s, partition %s: outcomes up to seq %d published, in order:\n", r.name, pk, upto)
	for i, o := range r.got {
		if o.PK == pk && o.Seq <= upto {
			fmt.Fprintf(&b, "  %s seq %d %s %s %v\n", r.at[i].Format("15:04:05.000000"), o.Seq, o.Status, o.Reason, o.Rows)
		}
	}
	fmt.Fprintf(&b, "instance %s, partition %s: its first 60 decisions:\n", r.name, pk)
	n := 0
	for _, line := range strings.Split(r.logs.String(), "\n") {
		if n < 60 && strings.Contains(line, "pk="+pk+" ") && !strings.Contains(line, `msg="command applied"`) {
			fmt.Fprintf(&b, "  %s\n", line)
			n++
		}
	}
	t.Log(b.String())
}

func (r *recordingJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	r.record(m)
	return r.JetStream.PublishMsg(ctx, m, opts...)
}

func (r *recordingJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	r.record(m)
	return r.JetStream.PublishMsgAsync(m, opts...)
}

var overlapSize = map[string]int{"sqlite": 3000, "azurite": 600}

// TestOverlap runs two projectors at the same time over every shard of one
// journal and one table store, each with its own consumers and its own row
// cache, as two instances do for a moment when a shard changes hands (a
// lease lapsed, a process paused, a handoff). One of them pauses at random
// between its reads and its writes. The workload has rejects, deletes,
// re-inserts, ifVersion guards and re-sent command IDs on a few hot
// partitions. Whatever the interleaving: the table equals the model, the
// change feed holds exactly one event per version, and every outcome either
// instance published — not just the one JetStream kept — equals the model's.
// On each row layout (SPEC §4; plain: the stale instance's writes to the
// table itself must not move a row back either).
func TestOverlap(t *testing.T) {
	for _, b := range projectiontest.Backends(azuriteSrv.ConnectionString()) {
		for _, layout := range []wire.Layout{wire.LayoutVersioned, wire.LayoutPlain} {
			t.Run(b.Name+"/"+string(layout), func(t *testing.T) { overlap(t, b, layout) })
		}
	}
}

func overlap(t *testing.T, b projectiontest.Backend, layout wire.Layout) {
	ctx := journaltest.Context(t, 5*time.Minute)
	st := b.Open(t)
	h := projectiontest.Start(t, st, projectiontest.Options{})
	h.SetLayout(ctx, "orders", layout)
	vt := projectiontest.VersionTable(t, "orders", layout)
	slow := &jitterStore{Store: st, rng: rand.New(rand.NewPCG(3, 4)), pct: 30, max: 15 * time.Millisecond}
	jsA := &recordingJS{JetStream: h.JS, name: "a"}
	jsB := &recordingJS{JetStream: h.JS, name: "b"}
	pA, err := projection.New(ctx, jsA, slow, projection.Config{Durable: "a", FetchBatch: 24, Concurrency: 4,
		Logger: jsA.logger()})
	if err != nil {
		t.Fatal(err)
	}
	pB, err := projection.New(ctx, jsB, st, projection.Config{Durable: "b", FetchBatch: 16,
		Logger: jsB.logger()})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- pA.Run(rctx) }()
	go func() { done <- pB.Run(rctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("projector: %v", err)
			}
		}
	}
	t.Cleanup(stop)

	w := projectiontest.NewWorkload(11, "orders", 3, 6)
	cmds := make([]*events.Command, overlapSize[b.Name])
	for i := range cmds {
		cmds[i] = w.Next()
	}
	h.PublishAll(ctx, cmds)
	h.WaitProjected(ctx)
	// Both instances handle everything: wait for the slower one.
	projectiontest.WaitFor(t, ctx, "both projectors finish the journal", func() (bool, error) {
		return consumersDone(ctx, h, "a", "b")
	})
	stop()

	model := h.Model(ctx)
	projectiontest.CompareTableIn(t, h.Store, vt, "orders", model)
	if layout == wire.LayoutPlain {
		projectiontest.CheckPlain(t, h.Store, "orders")
	}
	projectiontest.CheckOutcomes(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)
	explained := map[string]bool{}
	for _, js := range []*recordingJS{jsA, jsB} {
		bad := 0
		for _, o := range js.got {
			if want := model.Status[o.Seq]; string(o.Status) != want {
				bad++
				if bad <= 10 {
					t.Errorf("instance %s published seq %d (%s) %s (%s); model says %s", js.name, o.Seq, o.ID, o.Status, o.Reason, want)
				}
				if !explained[o.PK] {
					explained[o.PK] = true
					jsA.explain(t, o.PK, o.Seq+20)
					jsB.explain(t, o.PK, o.Seq+20)
				}
			}
		}
		if bad > 0 {
			t.Errorf("instance %s published %d wrong outcomes", js.name, bad)
		}
	}
	sa, sb := pA.Stats(), pB.Stats()
	if n := sa.Disagreements.Load() + sb.Disagreements.Load(); n != 0 {
		t.Errorf("%d disagreements reported on a store that keeps its writes", n)
	}
	conflicts := sa.FenceConflicts.Load() + sb.FenceConflicts.Load()
	if conflicts == 0 {
		t.Error("no fence conflict: the two instances never overlapped, the test proves nothing")
	}
	t.Logf("%d commands; fence conflicts: a %d, b %d; outcomes published: a %d, b %d",
		len(cmds), sa.FenceConflicts.Load(), sb.FenceConflicts.Load(), len(jsA.got), len(jsB.got))
}

// consumersDone reports whether every shard's consumer of each durable
// prefix has delivered and had acknowledged every message.
func consumersDone(ctx context.Context, h *projectiontest.Harness, durables ...string) (bool, error) {
	for _, d := range durables {
		for sh := 0; sh < h.Journal.Shards(); sh++ {
			c, err := h.JS.Consumer(ctx, h.Journal.Name(), wire.ConsumerName(d, sh))
			if err != nil {
				return false, err
			}
			info, err := c.Info(ctx)
			if err != nil {
				return false, err
			}
			if info.NumPending > 0 || info.NumAckPending > 0 {
				return false, nil
			}
		}
	}
	return true, nil
}
