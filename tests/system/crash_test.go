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
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// TestCrash hard-kills (SIGKILL) a projector process at random moments at
// least 20 times while a workload is being published and projected,
// restarting it each time. The final table must equal the model and an
// uninterrupted projection of the same journal, row for row and version for
// version, and every command must have exactly the outcome the model gives.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs a projector process 20+ times")
	}
	ctx := journaltest.Context(t, 10*time.Minute)
	dbPath := filepath.Join(t.TempDir(), "tables.db")
	data := t.TempDir()
	st, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := projectiontest.Start(t, st, projectiontest.Options{})
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
	projectiontest.CompareTable(t, st, "orders", model)
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
	want := projectiontest.TableVersions(t, st, "orders")
	projectiontest.WaitFor(t, ctx, "the uninterrupted projection catches up", func() (bool, error) {
		got, err := projectiontest.ReadVersions(ctx, fresh, "orders")
		return err == nil && projectiontest.SameVersionCount(got, want), err
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	projectiontest.CompareStores(t, st, fresh, "orders")
}
