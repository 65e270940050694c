package system_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store/azure"
	"github.com/tablejournal/tablejournal/wire"
)

// Chaos test parameters: publishing lasts chaosPublish, with chaosEvents
// events at random times spread over it.
const (
	chaosPublish   = 60 * time.Second
	chaosEvents    = 34
	chaosMinEvents = 30
	chaosSeedEnv   = "TABLEJOURNAL_CHAOS_SEED"
	chaosLogsEnv   = "TABLEJOURNAL_CHAOS_LOGS" // a folder that keeps the projectors' logs
)

// TestChaos runs three projector processes, started with identical flags,
// on a 3-node JetStream cluster with every stream and bucket at three
// replicas, while a seeded workload (every op, rejections, multi-row
// commands, re-sent IDs) is published for a minute. Meanwhile, at random:
// an instance is SIGKILLed and started again, one is stopped with SIGTERM
// and started again, a fourth is started or stopped, a NATS node is
// restarted. At the end every row and version equals the model, every
// outcome equals the model's, the change feed holds exactly one event per
// version, and every acknowledged command is in the journal. Half the load
// goes to a second table in the plain layout: its history equals the model
// too, the table its tips, and replay verify finds both tables identical to
// a rebuild. It prints the
// longest time any shard had pending commands and made no progress.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("a 90-second chaos run of projector processes on a JetStream cluster")
	}
	seed := uint64(2027)
	if v := os.Getenv(chaosSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", chaosSeedEnv, v, err)
		}
		seed = n
	}
	t.Logf("seed %d (%s)", seed, chaosSeedEnv)
	// A deadline for a hang, not a speed limit: on a machine running
	// three heavy jobs the whole test took 300 s, every check passed, and
	// the last read (longestStall) met a 5-minute deadline.
	ctx := journaltest.Context(t, 10*time.Minute)
	cluster := journaltest.StartCluster(t, 3)
	// Azurite: the embedded store is one process's file (the projector
	// command opens it exclusively), and Azure Tables is what several
	// projector processes share in production. Its own table, so that the
	// other tests of this binary's Azurite never meet it.
	st, err := azure.New(azure.Config{ConnectionString: azuriteSrv.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	h := projectiontest.Attach(t, cluster.URL(), st, projectiontest.Options{Journal: journal.Config{Replicas: 3}})
	args := []string{"--nats", cluster.URL(), "--tables", azuriteSrv.ConnectionString(), "--data", t.TempDir(),
		"--replicas", "3", "--log-level", "info"}

	logs := t.TempDir()
	if dir := os.Getenv(chaosLogsEnv); dir != "" {
		// Kept after the test, to read; a folder per run, so go test -count
		// keeps every run's logs.
		run, err := os.MkdirTemp(dir, time.Now().UTC().Format("150405-"))
		if err != nil {
			t.Fatal(err)
		}
		logs = run
		t.Logf("projector logs in %s", logs)
	}
	c := &chaos{t: t, cluster: cluster, args: args, logs: logs, rng: rand.New(rand.NewPCG(seed, 7))}
	for i := range c.core {
		c.core[i] = c.launch()
	}
	// A table of its own per run: Azurite outlives a run (go test -count).
	chaosTable := fmt.Sprintf("chaos%d", time.Now().UnixNano()%1e9)
	// Half the load on a second table in the plain layout (SPEC §4), under
	// the same events: both layouts are proved by one run.
	plainTable := chaosTable + "plain"
	h.SetLayout(ctx, plainTable, wire.LayoutPlain)
	ws := []*projectiontest.Workload{projectiontest.NewWorkload(seed, chaosTable, 40, 10), projectiontest.NewWorkload(seed+1, plainTable, 40, 10)}

	stopChaos := make(chan struct{})
	chaosDone := make(chan struct{})
	go func() { defer close(chaosDone); c.run(ctx, stopChaos) }()

	// Publish for a minute, about 200 commands a second.
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	published := 0
	// At least a minute, and until the chaos has had its events (a slow
	// machine, -race, makes each event take longer).
	for (time.Since(start) < chaosPublish || c.count() < chaosMinEvents) && time.Since(start) < 3*chaosPublish && ctx.Err() == nil {
		cmds := make([]*events.Command, 20)
		for i := range cmds {
			cmds[i] = ws[i%2].Next()
			if i%2 == 1 { // the workloads number their IDs alike
				cmds[i].ID = "plain-" + cmds[i].ID
			}
		}
		h.PublishAll(ctx, cmds)
		published += len(cmds)
		<-tick.C
	}
	tick.Stop()
	close(stopChaos)
	<-chaosDone
	t.Logf("published %d commands in %.0f s; %d chaos events:\n%s", published, time.Since(start).Seconds(), len(c.events), strings.Join(c.events, "\n"))
	for _, err := range c.errs {
		t.Error(err)
	}
	if len(c.events) < chaosMinEvents {
		t.Errorf("%d chaos events, want at least %d", len(c.events), chaosMinEvents)
	}

	// The three instances finish the journal, then stop cleanly.
	h.WaitProjected(ctx)
	for _, in := range c.all() {
		if !in.running() {
			t.Errorf("%s exited on its own: %v", in.name, in.err)
			continue
		}
		if err := in.stop(t, syscall.SIGTERM); err != nil {
			t.Error(err)
		}
	}

	model := h.Model(ctx)
	projectiontest.CompareTable(t, st, chaosTable, model)
	projectiontest.CompareTableIn(t, st, projectiontest.VersionTable(t, plainTable, wire.LayoutPlain), plainTable, model)
	projectiontest.CheckPlain(t, st, plainTable)
	got := h.Outcomes(ctx)
	projectiontest.CheckOutcomes(t, got, model)
	checkOutcomeRows(t, got, model)
	for _, table := range []string{chaosTable, plainTable} {
		h.CheckChangeFeed(ctx, table, model)
		verifyTable(t, ctx, h, st, table)
	}
	h.CheckAcknowledged(ctx)

	stall, shard, at := longestStall(t, ctx, h)
	t.Logf("longest time a shard had pending commands and made no progress: %.1f s (shard %d, until %.0f s into the run)",
		stall.Seconds(), shard, at.Sub(start).Seconds())
}

// chaos runs the random events against the projector processes and the
// cluster. It runs in its own goroutine, so it records errors instead of
// failing the test.
type chaos struct {
	t       *testing.T
	cluster *journaltest.Cluster
	args    []string
	logs    string
	rng     *rand.Rand

	mu     sync.Mutex
	core   [3]*instance
	fourth *instance
	n      int
	events []string
	errs   []error
	began  time.Time
}

func (c *chaos) launch() *instance {
	c.mu.Lock()
	c.n++
	name := fmt.Sprintf("p%d", c.n)
	c.mu.Unlock()
	in, err := launch(c.t, c.logs, name, c.args...)
	if err != nil {
		c.fail(err)
		return nil
	}
	return in
}

func (c *chaos) fail(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func (c *chaos) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

func (c *chaos) all() []*instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*instance
	for _, in := range c.core {
		if in != nil {
			out = append(out, in)
		}
	}
	if c.fourth != nil {
		out = append(out, c.fourth)
	}
	return out
}

func (c *chaos) run(ctx context.Context, stop <-chan struct{}) {
	c.began = time.Now()
	// Event k happens at a random moment of the k-th slot of the minute (or
	// at once, if the previous events ran over).
	slot := (chaosPublish - 2*time.Second) / chaosEvents
	for k := 0; ; k++ {
		wait := time.Until(c.began.Add(time.Duration(k)*slot + time.Duration(c.rng.Int64N(int64(slot)))))
		if k >= chaosEvents {
			wait = time.Hour // until stop
		}
		select {
		case <-stop:
			if c.fourth != nil {
				if err := c.fourth.stop(c.t, syscall.SIGTERM); err != nil {
					c.fail(err)
				}
				c.fourth = nil
			}
			return
		case <-time.After(wait):
		}
		// A core instance that exited by itself is a failure: it stops the
		// run of that slot, which the final checks report.
		for _, in := range c.all() {
			if !in.running() && in != nil {
				c.fail(fmt.Errorf("%s exited on its own: %v", in.name, in.err))
			}
		}
		what := c.event(ctx)
		c.mu.Lock()
		c.events = append(c.events, fmt.Sprintf("%5.1f s  %s", time.Since(c.began).Seconds(), what))
		c.mu.Unlock()
	}
}

// ready waits (up to 30 s) until in runs the projector: a SIGTERM before
// the process installed its handler would just kill it.
func (c *chaos) ready(ctx context.Context, in *instance) {
	deadline := time.Now().Add(30 * time.Second)
	for ctx.Err() == nil && time.Now().Before(deadline) && in.running() {
		if len(in.lines(`msg="projector running`)) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.fail(fmt.Errorf("%s did not start running within 30 s", in.name))
}

// event performs one random event and says what it did.
func (c *chaos) event(ctx context.Context) string {
	i := c.rng.IntN(len(c.core))
	switch r := c.rng.IntN(10); {
	case r < 3:
		old := c.core[i]
		_ = old.stop(c.t, syscall.SIGKILL)
		c.core[i] = c.launch()
		return fmt.Sprintf("SIGKILL %s, started %s", old.name, c.core[i].name)
	case r < 6:
		old := c.core[i]
		c.ready(ctx, old)
		if err := old.stop(c.t, syscall.SIGTERM); err != nil {
			c.fail(err)
		}
		c.core[i] = c.launch()
		return fmt.Sprintf("SIGTERM %s, started %s", old.name, c.core[i].name)
	case r < 8:
		if c.fourth == nil {
			c.fourth = c.launch()
			return "started a fourth, " + c.fourth.name
		}
		old := c.fourth
		c.ready(ctx, old)
		if err := old.stop(c.t, syscall.SIGTERM); err != nil {
			c.fail(err)
		}
		c.fourth = nil
		return "SIGTERM the fourth, " + old.name
	default:
		node := c.rng.IntN(c.cluster.Size())
		began := time.Now()
		if err := c.cluster.Restart(node); err != nil {
			c.fail(err)
			return fmt.Sprintf("restart NATS node %d failed", node+1)
		}
		// Let the cluster heal before anything else happens to it, so no
		// event ever takes a quorum away.
		if err := c.cluster.WaitReadyErr(ctx, 30*time.Second); err != nil {
			c.fail(err)
		}
		for _, s := range []string{wire.JournalStream, wire.OutcomesStream, wire.ChangesStream, "KV_" + projection.OwnersBucket} {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if err := c.cluster.WaitStreamCurrent(wctx, s); err != nil {
				c.fail(err)
			}
			cancel()
		}
		return fmt.Sprintf("restarted NATS node %d (healed in %.1f s)", node+1, time.Since(began).Seconds())
	}
}

// checkOutcomeRows checks that every applied outcome names exactly the row
// versions the model's command produced.
func checkOutcomeRows(t *testing.T, got map[uint64]wire.Outcome, m *projectiontest.Model) {
	t.Helper()
	want := make(map[uint64][]string)
	for id, hist := range m.Rows {
		for _, v := range hist {
			want[v.Seq] = append(want[v.Seq], fmt.Sprintf("%s@%d:%s:%v", id.RK, v.Version, v.Op, v.Deleted))
		}
	}
	bad := 0
	for seq, o := range got {
		if o.Status != wire.StatusApplied {
			continue
		}
		var have []string
		for _, r := range o.Rows {
			have = append(have, fmt.Sprintf("%s@%d:%s:%v", r.RK, r.Version, r.Op, r.Deleted))
		}
		slices.Sort(have)
		w := slices.Sorted(slices.Values(want[seq]))
		if !slices.Equal(have, w) {
			if bad++; bad <= 10 {
				t.Errorf("seq %d (%s): outcome rows %v, model %v", seq, o.ID, have, w)
			}
		}
	}
}

// longestStall returns the longest time any shard had a command stored in
// the journal without its outcome while no outcome of the shard was stored,
// by the servers' own timestamps, with the shard and when it ended.
func longestStall(t *testing.T, ctx context.Context, h *projectiontest.Harness) (time.Duration, int, time.Time) {
	t.Helper()
	type times struct{ pub, out time.Time }
	bySeq := make(map[uint64]*times)
	shardOf := make(map[uint64]int)
	err := h.Journal.Read(ctx, 1, 0, "", func(m journal.Msg) error {
		_, shard, _, err := wire.ParseJournalSubject(m.Subject)
		if err != nil {
			return err
		}
		bySeq[m.Seq], shardOf[m.Seq] = &times{pub: m.Time}, shard
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.JS.Stream(ctx, wire.OutcomesStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var o wire.Outcome
		if err := json.Unmarshal(m.Data, &o); err != nil {
			t.Fatal(err)
		}
		if tm := bySeq[o.Seq]; tm != nil && (tm.out.IsZero() || m.Time.Before(tm.out)) {
			tm.out = m.Time
		}
	}
	perShard := make(map[int][]times)
	for seq, tm := range bySeq {
		perShard[shardOf[seq]] = append(perShard[shardOf[seq]], *tm)
	}
	var (
		longest time.Duration
		which   int
		ended   time.Time
	)
	for shard, ts := range perShard {
		// Progress happens at outcome times. Before the k-th outcome the
		// shard had something pending since the earliest publish among the
		// commands whose outcomes come at or after it.
		slices.SortFunc(ts, func(a, b times) int { return a.out.Compare(b.out) })
		minPub := make([]time.Time, len(ts))
		for k := len(ts) - 1; k >= 0; k-- {
			minPub[k] = ts[k].pub
			if k+1 < len(ts) && minPub[k+1].Before(minPub[k]) {
				minPub[k] = minPub[k+1]
			}
		}
		for k := range ts {
			from := minPub[k]
			if k > 0 && ts[k-1].out.After(from) {
				from = ts[k-1].out
			}
			if d := ts[k].out.Sub(from); d > longest {
				longest, which, ended = d, shard, ts[k].out
			}
		}
	}
	return longest, which, ended
}
