package latency_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/simazure"
)

// benchTable is the table the commands write; rawTable the one the direct
// store transactions write.
const (
	benchTable = "latency"
	rawTable   = "latencyraw"
	partitions = 100
	// ratePerKind is the offered rate of each kind of request in the
	// "rate" rounds, per second.
	ratePerKind = 20
)

// The kinds of request measured, in the order of the metrics.
const (
	kindPublish = "publish" // acknowledged JetStream publish of a command-sized message
	kindStore   = "store"   // one-row upsert transaction straight on the store
	kindLayout  = "layout"  // the entities the projector writes for it (tip, version, fence), straight on the store
	kindEcho    = "echo"    // publish, then a consumer's answer over core NATS: the pipeline without a projector
	kindGet     = "get"     // a point read of the row straight from the store: what read-your-writes reads
	kindApply   = "apply"   // Client.Apply of a one-row upsert
	kindAgain   = "again"   // Client.Apply right after an Apply to the same partition
	kindWait    = "wait"    // Client.Wait after Publish returned
	kindRYW     = "ryw"     // Publish then Get(AfterSeq)
	kindFollow  = "follow"  // from Apply's return to the change reaching a follower
)

// BenchmarkLatency measures, per table store, against the projector
// command running in this process: the latency of an acknowledged
// publish, of a direct one-row store transaction, of a direct transaction
// of the entities the projector writes for that row (tip, version and
// fence: "layout"), of Client.Apply (after a
// store write, and again right after it to the same partition: "again"),
// of Wait alone, of read-your-writes (Publish then Get with AfterSeq),
// and a follower's delay from Apply's return to the change's delivery
// (0 when the change came first). "sequential" makes the requests one
// after the other, interleaved by kind; "rate" offers them at a steady
// rate (ratePerKind a second of each kind) and measures each from the moment it was due.
// It reports p50, p99 and p99.9 in milliseconds per kind, and the ratios
// lat-x-parts-p50 and lat-x-parts-p99 (Apply over publish + store, at the
// same percentile), again-x-parts-p50 (the Apply right after an Apply, over
// the same parts: a service writing one partition back to back),
// lat-x-layout-p50 (Apply over publish + layout: what the projector adds
// beyond the entities its layout writes), lat-x-floor-p50 (Apply over
// echo + layout, where "echo" is a publish answered by a consumer over
// core NATS the moment it is delivered: Apply's floor, the pipeline
// without the projector's work and with its store write),
// lat-x-apply-get-p50 (read-your-writes over Apply + "get", a point read of
// the row straight from the store: read-your-writes' floor) and
// lat-x-apply-p50 (read-your-writes over Apply); on
// the simulated account also the store reads and transactions made while
// an Apply waited, per Apply (apply-store-reads, apply-store-txs: each is a
// 5 ms round trip). Each round makes TABLEJOURNAL_BENCH_LATENCY_N requests of each kind
// (default 300); run it with -benchtime 1x.
func BenchmarkLatency(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			e := startEnv(b, backend)
			b.Run("sequential", func(b *testing.B) {
				for b.Loop() {
					e.sequential(b, requests()).report(b)
				}
			})
			b.Run("rate", func(b *testing.B) {
				for b.Loop() {
					e.atRate(b, requests(), ratePerKind).report(b)
				}
			})
		})
	}
}

// samples are latencies by kind, and counts of what the requests cost.
type samples struct {
	mu     sync.Mutex
	lat    map[string][]time.Duration
	counts map[string]int64
}

// count adds n to the count name: on the simulated account, the store
// requests made while an Apply waited (reported per Apply).
func (s *samples) count(name string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = make(map[string]int64)
	}
	s.counts[name] += n
}

func (s *samples) add(kind string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lat == nil {
		s.lat = make(map[string][]time.Duration)
	}
	s.lat[kind] = append(s.lat[kind], d)
}

// quantile returns the q-quantile of kind's latencies in milliseconds
// (nearest rank).
func (s *samples) quantile(kind string, q float64) float64 {
	v := slices.Clone(s.lat[kind])
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := min(len(v)-1, int(q*float64(len(v))+0.5)-1)
	return float64(v[max(i, 0)].Microseconds()) / 1000
}

func (s *samples) report(b *testing.B) {
	for _, k := range []string{kindPublish, kindStore, kindLayout, kindEcho, kindGet, kindApply, kindAgain, kindWait, kindRYW, kindFollow} {
		if len(s.lat[k]) == 0 {
			continue
		}
		b.ReportMetric(s.quantile(k, 0.5), k+"-p50-ms")
		b.ReportMetric(s.quantile(k, 0.99), k+"-p99-ms")
		b.ReportMetric(s.quantile(k, 0.999), k+"-p99.9-ms")
	}
	parts := func(q float64) float64 {
		return s.quantile(kindApply, q) / (s.quantile(kindPublish, q) + s.quantile(kindStore, q))
	}
	b.ReportMetric(parts(0.5), "lat-x-parts-p50")
	b.ReportMetric(parts(0.99), "lat-x-parts-p99")
	b.ReportMetric(s.quantile(kindRYW, 0.5)/s.quantile(kindApply, 0.5), "lat-x-apply-p50")
	if len(s.lat[kindAgain]) > 0 {
		b.ReportMetric(s.quantile(kindAgain, 0.5)/(s.quantile(kindPublish, 0.5)+s.quantile(kindStore, 0.5)), "again-x-parts-p50")
	}
	if len(s.lat[kindLayout]) > 0 {
		b.ReportMetric(s.quantile(kindApply, 0.5)/(s.quantile(kindPublish, 0.5)+s.quantile(kindLayout, 0.5)), "lat-x-layout-p50")
	}
	if len(s.lat[kindGet]) > 0 {
		b.ReportMetric(s.quantile(kindRYW, 0.5)/(s.quantile(kindApply, 0.5)+s.quantile(kindGet, 0.5)), "lat-x-apply-get-p50")
	}
	if len(s.lat[kindEcho]) > 0 {
		b.ReportMetric(s.quantile(kindApply, 0.5)/(s.quantile(kindEcho, 0.5)+s.quantile(kindLayout, 0.5)), "lat-x-floor-p50")
	}
	for name, n := range s.counts {
		b.ReportMetric(float64(n)/float64(len(s.lat[kindApply])), name)
	}
	b.ReportMetric(0, "ns/op")
}

// round is one request of each kind, numbered i in the round.
type round struct {
	e      *env
	ctx    context.Context
	run    string // distinguishes the rounds' command IDs and rows
	s      *samples
	follow *follower
}

// do makes request i of kind and returns its latency measured from due.
func (r *round) do(kind string, i int, due time.Time) error {
	pk := fmt.Sprintf("p%03d", i%partitions)
	cmd := func() *tj.Command {
		return tj.NewCommand(benchTable, pk).WithID(fmt.Sprintf("%s-%s-%d", r.run, kind, i)).
			Upsert(fmt.Sprintf("r%d", i%10), tj.Entity{"i": tj.Int64(int64(i)), "note": tj.String("a row of a latency benchmark")})
	}
	switch kind {
	case kindPublish:
		msg := &nats.Msg{Subject: fmt.Sprintf("latraw.%s.%s", r.run, pk), Data: rawPayload,
			Header: nats.Header{jetstream.MsgIDHeader: []string{fmt.Sprintf("%s-raw-%d", r.run, i)}}}
		if _, err := r.e.js.PublishMsg(r.ctx, msg); err != nil {
			return err
		}
	case kindStore:
		_, err := r.e.st.Transact(r.ctx, rawTable, pk, []store.Op{{Kind: store.Upsert, RK: fmt.Sprintf("r%d", i%10),
			Props: tj.Entity{"i": tj.Int64(int64(i)), "note": tj.String("a row of a latency benchmark")}}})
		if err != nil {
			return err
		}
	case kindLayout:
		if _, err := r.e.st.Transact(r.ctx, rawTable, pk, layoutOps(fmt.Sprintf("r%d", i%10), uint64(i+1))); err != nil {
			return err
		}
	case kindGet:
		if _, err := r.e.st.Get(r.ctx, benchTable, pk, rows.TipKey(fmt.Sprintf("r%d", i%10))); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	case kindEcho:
		if err := r.e.echo.request(r.ctx, r.e.js, fmt.Sprintf("%s-%d", r.run, i)); err != nil {
			return err
		}
	case kindApply, kindAgain:
		c := cmd()
		var before simazure.Stats
		if r.e.sim != nil {
			before = r.e.sim.Stats()
		}
		o, err := r.e.c.Apply(r.ctx, c)
		if err != nil {
			return err
		}
		at := time.Now()
		r.s.add(kind, at.Sub(due))
		if kind == kindAgain {
			return nil
		}
		if r.e.sim != nil {
			after := r.e.sim.Stats()
			r.s.count("apply-store-reads", after.Reads-before.Reads)
			r.s.count("apply-store-txs", after.Transactions-before.Transactions)
		}
		if r.follow != nil {
			r.follow.applied(o.ID, at)
		}
		return nil
	case kindWait:
		pos, err := r.e.c.Publish(r.ctx, cmd())
		if err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := r.e.c.Wait(r.ctx, pos); err != nil {
			return err
		}
		r.s.add(kind, time.Since(t0))
		return nil
	case kindRYW:
		pos, err := r.e.c.Publish(r.ctx, cmd())
		if err != nil {
			return err
		}
		row, err := r.e.c.Get(r.ctx, benchTable, pk, fmt.Sprintf("r%d", i%10), tj.AfterSeq(pos.Seq))
		if err != nil {
			return err
		}
		if row.Seq < pos.Seq {
			return fmt.Errorf("read-your-writes: read seq %d, wrote %d", row.Seq, pos.Seq)
		}
	}
	r.s.add(kind, time.Since(due))
	return nil
}

// layoutOps are the entities the projector writes for an upsert of row rk
// at journal sequence seq (SPEC §4): its tip, its version row and the
// partition's fence, as one transaction, unconditional: what a command
// costs the store in this layout, beside the one row the "store" kind
// writes.
func layoutOps(rk string, seq uint64) []store.Op {
	row := rows.Row{RK: rk, Version: int64(seq), Cmd: fmt.Sprintf("c%d", seq), Seq: seq, At: time.Now().UTC(),
		Op: events.OpUpsert, Props: tj.Entity{"i": tj.Int64(int64(seq)), "note": tj.String("a row of a latency benchmark")}}
	tip := row
	tip.Tip = true
	return []store.Op{
		{Kind: store.Upsert, RK: rows.FenceKey, Props: tj.Entity{rows.ColSeq: tj.Int64(int64(seq)), rows.ColCmd: tj.String(row.Cmd), rows.ColAt: tj.DateTime(row.At)}},
		{Kind: store.Upsert, RK: tip.StoreKey(), Props: tip.Encode()},
		{Kind: store.Upsert, RK: row.StoreKey(), Props: row.Encode()},
	}
}

// rawPayload is about the size of the commands' messages.
var rawPayload = make([]byte, 160)

func (e *env) newRound(b *testing.B, withFollower bool) *round {
	ctx := journaltest.Context(b, 10*time.Minute)
	if err := e.st.CreateTable(ctx, rawTable); err != nil && !errors.Is(err, store.ErrTableExists) {
		b.Fatal(err)
	}
	r := &round{e: e, ctx: ctx, run: fmt.Sprintf("r%d", time.Now().UnixNano()), s: &samples{}}
	if withFollower {
		r.follow = startFollower(b, e, r.run)
	}
	return r
}

// sequential makes n requests of each kind, one after the other.
func (e *env) sequential(b *testing.B, n int) *samples {
	r := e.newRound(b, true)
	for i := range n {
		for _, k := range []string{kindPublish, kindStore, kindLayout, kindEcho, kindGet, kindApply, kindAgain, kindWait, kindRYW} {
			if err := r.do(k, i, time.Now()); err != nil {
				b.Fatalf("%s %d: %v", k, i, err)
			}
		}
	}
	r.follow.finish(b, r.s)
	return r.s
}

// atRate makes n requests of each kind, perSec of each kind a second,
// each measured from the moment it was due.
func (e *env) atRate(b *testing.B, n, perSec int) *samples {
	r := e.newRound(b, false)
	kinds := []string{kindPublish, kindStore, kindApply, kindRYW}
	every := time.Second / time.Duration(perSec*len(kinds))
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for j := range n * len(kinds) {
		due := start.Add(time.Duration(j) * every)
		time.Sleep(time.Until(due)) // pacing the offered load, not synchronisation
		wg.Go(func() {
			if err := r.do(kinds[j%len(kinds)], j/len(kinds), due); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	return r.s
}

// follower follows the table's changes and takes, per command of a round,
// the moment its change arrived.
type follower struct {
	mu      sync.Mutex
	arrived map[string]time.Time
	apps    map[string]time.Time
	cancel  context.CancelFunc
	done    chan error
}

func startFollower(b *testing.B, e *env, run string) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{arrived: map[string]time.Time{}, apps: map[string]time.Time{}, cancel: cancel, done: make(chan error, 1)}
	c := e.client(b)
	ready := make(chan struct{})
	go func() {
		var once sync.Once
		f.done <- c.Follow(ctx, "latency-"+run, benchTable, func(_ context.Context, ch tj.Change) error {
			if ch.Command == run+"-follow" {
				once.Do(func() { close(ready) })
			}
			f.mu.Lock()
			f.arrived[ch.Command] = time.Now()
			f.mu.Unlock()
			return nil
		})
	}()
	// The follower is up once it has seen this round's first change: a new
	// follower first reads the earlier rounds' changes, and a round that
	// began meanwhile measured that catching up as its delays.
	if _, err := e.c.Apply(context.Background(), tj.NewCommand(benchTable, "warm").WithID(run+"-follow").
		Upsert("r", tj.Entity{"i": tj.Int64(1)})); err != nil {
		b.Fatal(err)
	}
	select {
	case <-ready:
	case <-time.After(time.Minute):
		b.Fatal("the follower saw no change within a minute")
	}
	return f
}

func (f *follower) applied(id string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.apps[id] = at
}

// finish waits until the change of every applied command arrived, stops
// the follower and adds the delays to s.
func (f *follower) finish(b *testing.B, s *samples) {
	deadline := time.Now().Add(time.Minute)
	for {
		f.mu.Lock()
		missing := 0
		for id := range f.apps {
			if _, ok := f.arrived[id]; !ok {
				missing++
			}
		}
		f.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d changes never reached the follower", missing)
		}
		time.Sleep(10 * time.Millisecond) // a condition polled with a deadline
	}
	f.cancel()
	if err := <-f.done; err != nil {
		b.Fatal(err)
	}
	for id, at := range f.apps {
		s.add(kindFollow, max(f.arrived[id].Sub(at), 0))
	}
}
