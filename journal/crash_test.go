package journal_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// Environment of the helper server process.
const (
	helperDirEnv    = "TABLEJOURNAL_HELPER_SERVER_DIR"
	helperListenEnv = "TABLEJOURNAL_HELPER_SERVER_LISTEN"
)

// TestHelperServerProcess is not a test: run as a child process by
// TestCrashLosesNoAcknowledgedPublish, it serves the journal from a folder
// until it is killed or its stdin closes.
func TestHelperServerProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("the embedded server of TestCrashLosesNoAcknowledgedPublish's child process")
	}
	s, err := embedded.Start(embedded.Config{
		Dir:    dir,
		Listen: os.Getenv(helperListenEnv),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		fmt.Printf("FAILED %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("READY %s\n", s.Config().Listen)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes away
	s.Shutdown()
}

// serverProcess is a child process running TestHelperServerProcess.
type serverProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
}

// startServerProcess starts the embedded server in a child process on dir
// and listen (port 0: any) and waits until it is ready.
func startServerProcess(t *testing.T, dir, listen string) *serverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServerProcess$")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, helperListenEnv+"="+listen)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, stdin: stdin}
	t.Cleanup(p.kill)

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if addr, ok := strings.CutPrefix(line, "READY "); ok {
				ready <- addr
			} else if strings.HasPrefix(line, "FAILED ") {
				ready <- line
			}
		}
		close(ready)
	}()
	select {
	case addr, ok := <-ready:
		if !ok || strings.HasPrefix(addr, "FAILED ") {
			t.Fatalf("server process on %s did not start: %q", listen, addr)
		}
		p.addr = addr
	case <-time.After(60 * time.Second):
		t.Fatalf("server process on %s not ready after 60s", listen)
	}
	return p
}

// kill sends SIGKILL: no shutdown, no flush.
func (p *serverProcess) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = p.stdin.Close()
}

// TestCrashLosesNoAcknowledgedPublish kills the server process (SIGKILL)
// several times while writers publish, restarts it on the same store and
// port, and checks that every acknowledged command is in the journal exactly
// once.
func TestCrashLosesNoAcknowledgedPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a server process")
	}
	const kills = 3
	dir := t.TempDir()
	srv := startServerProcess(t, dir, "127.0.0.1:0")
	addr := srv.addr

	_, js := journaltest.Connect(t, "nats://"+addr)
	ctx := journaltest.Context(t, 5*time.Minute)
	j, err := journal.Ensure(ctx, js, journal.Config{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	var retries atomic.Int64
	w := journal.NewWriter(js, "",
		journal.WithAckTimeout(2*time.Second),
		journal.WithMaxInFlight(64),
		journal.WithRetryNotify(func(error, time.Duration) { retries.Add(1) }))

	var (
		mu       sync.Mutex
		acked    = map[string]uint64{} // command ID -> journal sequence
		failures []error
		futures  []*journal.Future
		nacked   atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	record := func(res journal.PublishResult, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures = append(failures, err)
			return
		}
		acked[res.ID] = res.Seq
		nacked.Add(1)
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for g := range 3 { // synchronous writers
		wg.Go(func() {
			for i := 0; !stopped(); i++ {
				record(w.Publish(ctx, command(fmt.Sprintf("sync-%d-%d", g, i), "orders", fmt.Sprintf("pk-%d", i%5))))
			}
		})
	}
	wg.Go(func() { // a pipelined writer
		for i := 0; !stopped(); i++ {
			f, err := w.PublishAsync(ctx, command(fmt.Sprintf("async-%d", i), "orders", fmt.Sprintf("pk-%d", i%7)))
			if err != nil {
				record(journal.PublishResult{}, err)
				continue
			}
			mu.Lock()
			futures = append(futures, f)
			mu.Unlock()
		}
	})

	progress := func() {
		t.Helper()
		base := nacked.Load()
		journaltest.WaitFor(t, 2*time.Minute, "publishes to be acknowledged", func() bool { return nacked.Load() >= base+100 })
	}
	for range kills {
		progress()
		srv.kill()
		srv = startServerProcess(t, dir, addr)
	}
	progress()
	close(stop)
	wg.Wait()
	if err := w.Flush(ctx); err != nil {
		t.Errorf("Flush: %v", err)
	}
	for _, f := range futures {
		record(f.Result(ctx))
	}

	for _, err := range failures {
		t.Errorf("publish failed: %v", err)
	}
	// Every acknowledged command is stored where its ack said, and every
	// stored command was published once: no retry became a second command.
	seen := map[string]int{}
	if err := j.Read(ctx, 0, 0, "", func(m journal.Msg) error {
		cmd, err := journal.DecodeMsg(m)
		if err != nil {
			return err
		}
		seen[cmd.ID]++
		if seq, ok := acked[cmd.ID]; ok && seq != m.Seq {
			t.Errorf("%s acknowledged at seq %d, stored at %d", cmd.ID, seq, m.Seq)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id := range acked {
		if seen[id] == 0 {
			t.Errorf("acknowledged command %s lost", id)
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("command %s stored %d times", id, n)
		}
		if _, ok := acked[id]; !ok {
			t.Errorf("command %s stored but never acknowledged", id)
		}
	}
	t.Logf("%d kills, %d commands acknowledged and stored once, %d retries", kills, len(acked), retries.Load())
}
