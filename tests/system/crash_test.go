package system_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// TestCrash hard-kills (SIGKILL) a projector process at random moments at
// least 20 times while a workload is being published and projected,
// restarting it each time, on each row layout (SPEC §4; plain: kills land
// between the history's commit and the table's write too). The final table
// must equal the model and an uninterrupted projection of the same journal,
// row for row and version for version, every command must have exactly the
// outcome the model gives, and replay verify must find the table identical
// to its rebuild (plain: the history, and the table equal to its tips).
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs a projector process 20+ times")
	}
	for _, l := range []wire.Layout{wire.LayoutVersioned, wire.LayoutPlain} {
		t.Run(string(l), func(t *testing.T) { crash(t, l) })
	}
}

func crash(t *testing.T, layout wire.Layout) {
	ctx := journaltest.Context(t, 10*time.Minute)
	dbPath := filepath.Join(t.TempDir(), "tables.db")
	data := t.TempDir()
	st, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := projectiontest.Start(t, st, projectiontest.Options{})
	h.SetLayout(ctx, "orders", layout)
	vt := projectiontest.VersionTable(t, "orders", layout)
	w := projectiontest.NewWorkload(2026, "orders", 20, 10)
	rng := rand.New(rand.NewPCG(11, 13))

	stored := func() uint64 {
		n, _ := outcomes.NewReader(h.JS).Last(ctx) // one per journal message, none deleted
		return n
	}
	start := func() *exec.Cmd {
		// Small fetches and no cache make a kill land inside a batch often.
		// The same instance ID every time: a restarted process takes its
		// killed predecessor's shard leases back at once.
		cmd := exec.Command(projectorBin, "--nats", h.Server.ClientURL(), "--tables", "sqlite:"+dbPath, "--data", data,
			"--fetch-batch", "64", "--cache-rows", "-1", "--instance-id", "crash-child", "--log-level", "error")
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = childAttr()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	publish := func(n int) {
		cmds := make([]*events.Command, n)
		for i := range cmds {
			cmds[i] = w.Next()
		}
		h.PublishAll(ctx, cmds)
	}

	publish(500)
	const kills = 24
	for i := 0; i < kills; i++ {
		before := stored()
		child := start()
		// Kill once the projector has made some random progress, so kills land
		// in fetches, transactions and outcome publishing alike.
		// At least 100 commands are pending (the last publish), a few of which
		// may be duplicates that add no outcome: aim below that.
		target := before + 1 + uint64(rng.IntN(90))
		projectiontest.WaitFor(t, ctx, fmt.Sprintf("kill %d: %d outcomes", i, target), func() (bool, error) {
			got := stored()
			return got >= target, fmt.Errorf("%d outcomes so far", got)
		})
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait() // "signal: killed"
		publish(100 + rng.IntN(100))
	}

	// Finish the work with one last, uninterrupted run.
	child := start()
	h.WaitProjected(ctx)
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("projector after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = child.Process.Signal(syscall.SIGQUIT) // the Go runtime prints every goroutine
		<-exited
		t.Fatal("projector did not stop within 30 s of SIGTERM")
	}

	model := h.Model(ctx)
	projectiontest.CompareTableIn(t, st, vt, "orders", model)
	if layout == wire.LayoutPlain {
		projectiontest.CheckPlain(t, st, "orders")
	}
	projectiontest.CheckOutcomes(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)

	// The same journal projected without interruption, into a fresh store.
	fresh := projectiontest.SQLite(t)
	p, err := projection.New(ctx, h.JS, fresh, projection.Config{Durable: "uninterrupted", NoChangeFeed: true, Logger: projectiontest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	want := projectiontest.TableVersions(t, st, vt)
	projectiontest.WaitFor(t, ctx, "the uninterrupted projection catches up", func() (bool, error) {
		got, err := projectiontest.ReadVersions(ctx, fresh, vt)
		return err == nil && projectiontest.SameVersionCount(got, want), err
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	projectiontest.CompareStores(t, st, fresh, vt)
	if layout == wire.LayoutPlain {
		projectiontest.CompareStores(t, st, fresh, "orders")
	}
	verifyTable(t, ctx, h, st, "orders")
}

// verifyTable runs replay verify on table: its rows equal a rebuild of its
// journal (plain: its history, and the table its history's tips).
func verifyTable(t *testing.T, ctx context.Context, h *projectiontest.Harness, st store.Store, table string) {
	t.Helper()
	src, err := replay.New(ctx, replay.Config{Store: st, JetStream: h.JS})
	if err != nil {
		t.Fatal(err)
	}
	d, err := rebuild.New(src).Verify(ctx, rebuild.VerifyConfig{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Identical() {
		t.Errorf("replay verify %s: %+v", table, d)
	}
}
