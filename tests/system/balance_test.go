package system_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/projection/shards"
)

// instance is one projector process.
type instance struct {
	name string
	cmd  *exec.Cmd
	log  string // its stderr
	done chan struct{}
	err  error // its exit, once done is closed

	mu sync.Mutex
	id string
}

// startInstance starts a projector process with args; it is killed when
// the test ends.
func startInstance(t *testing.T, name string, args ...string) *instance {
	t.Helper()
	in, err := launch(t, t.TempDir(), name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// launch is startInstance with its log in dir, returning its error: it may
// be called from any goroutine.
func launch(t *testing.T, dir, name string, args ...string) (*instance, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in := &instance{name: name, log: logPath, done: make(chan struct{})}
	in.cmd = exec.Command(projectorBin, args...)
	in.cmd.Stdout, in.cmd.Stderr = f, f
	in.cmd.SysProcAttr = childAttr()
	if err := in.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { in.err = in.cmd.Wait(); close(in.done) }()
	t.Cleanup(func() {
		if t.Failed() && in.running() {
			// The Go runtime prints every goroutine into the log, then exits.
			_ = in.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-in.done:
			case <-time.After(5 * time.Second):
			}
		}
		_ = in.cmd.Process.Kill()
		<-in.done
		if t.Failed() {
			in.tail(t, 40)
		}
	})
	return in, nil
}

func (in *instance) running() bool {
	select {
	case <-in.done:
		return false
	default:
		return true
	}
}

// stop sends sig and waits for the process to exit; after SIGTERM it must
// exit cleanly within 30 s (90 s in a -race build, whose processes run
// several times slower).
func (in *instance) stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if sig == syscall.SIGTERM {
		// A process still starting (a -race binary on a busy machine takes
		// seconds) has no handler yet, and SIGTERM would kill it outright.
		if err := in.awaitRunning(time.Minute); err != nil {
			return err
		}
	}
	if err := in.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	limit := raceSlowdown * 30 * time.Second // a Kubernetes grace period, in a -race binary's time
	select {
	case <-in.done:
	case <-time.After(limit):
		_ = in.cmd.Process.Signal(syscall.SIGQUIT) // the Go runtime prints every goroutine
		<-in.done
		return fmt.Errorf("%s did not exit within %v of %v", in.name, limit, sig)
	}
	if sig == syscall.SIGTERM && in.err != nil {
		return fmt.Errorf("%s after SIGTERM: %v", in.name, in.err)
	}
	return nil
}

// awaitRunning waits until the instance logs that it runs (its signal
// handler is installed before), or it exits.
func (in *instance) awaitRunning(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		data, _ := os.ReadFile(in.log)
		if bytes.Contains(data, []byte(`msg="projector running`)) || !in.running() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not start within %v", in.name, d)
		}
		select {
		case <-in.done:
		case <-time.After(50 * time.Millisecond): // polling its log
		}
	}
}

var instanceRE = regexp.MustCompile(`msg="projector running[^"]*".* instance=(\S+)`)

// ID waits for the instance's ID in its log.
func (in *instance) ID(t *testing.T, ctx context.Context) string {
	t.Helper()
	projectiontest.WaitFor(t, ctx, in.name+" logs its instance ID", func() (bool, error) {
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.id != "" {
			return true, nil
		}
		data, err := os.ReadFile(in.log)
		if m := instanceRE.FindSubmatch(data); m != nil {
			in.id = string(m[1])
			return true, nil
		}
		if !in.running() {
			return false, fmt.Errorf("exited: %v", in.err)
		}
		return false, err
	})
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.id
}

// lines returns the log lines that contain s.
func (in *instance) lines(s string) []string {
	f, err := os.Open(in.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			out = append(out, sc.Text())
		}
	}
	return out
}

func (in *instance) tail(t *testing.T, n int) {
	lines := in.lines("")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("last log lines of %s:\n%s", in.name, strings.Join(lines, "\n"))
}

// owners reads every shard's lease owner from the ownership bucket ("" for
// none), as `projector status` does.
func owners(ctx context.Context, js jetstream.JetStream, n int) ([]string, error) {
	kv, err := js.KeyValue(ctx, projection.OwnersBucket)
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for sh := range out {
		e, err := kv.Get(ctx, shards.ShardKey(sh))
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var l shards.Lease
		if err := json.Unmarshal(e.Value(), &l); err != nil {
			return nil, fmt.Errorf("shard %d: %s: %w", sh, e.Value(), err)
		}
		out[sh] = l.Owner
	}
	return out, nil
}

func ownerCounts(own []string) map[string]int {
	c := make(map[string]int)
	for _, o := range own {
		c[o]++
	}
	return c
}

// TestBalance: three projector processes started with identical flags own
// 5 or 6 of the 16 shards each within 10 s of the last start; after one is
// killed (SIGKILL) the other two own all 16 within 10 s; after SIGTERM an
// instance releases its leases before it exits. Every change of owner is
// one log line of the instance that made it.
func TestBalance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs projector processes")
	}
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, 2*time.Minute)
	// Azurite: the projector command opens an embedded store exclusively.
	args := []string{"--nats", srv.ClientURL(), "--tables", azuriteSrv.ConnectionString(),
		"--data", t.TempDir(), "--log-level", "info"}

	var ins []*instance
	for i := 0; i < 3; i++ {
		ins = append(ins, startInstance(t, fmt.Sprintf("p%d", i+1), args...))
	}
	lastStart := time.Now()
	ids := make([]string, 3)
	for i, in := range ins {
		ids[i] = in.ID(t, ctx)
	}
	within := func(what string, limit time.Duration, cond func(own []string) bool) time.Duration {
		t.Helper()
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		projectiontest.WaitFor(t, wctx, what, func() (bool, error) {
			own, err := owners(ctx, js, 16)
			if err != nil {
				return false, err
			}
			return cond(own), fmt.Errorf("owners %v", ownerCounts(own))
		})
		return time.Since(start)
	}

	within("each of 3 instances owns 5 or 6 shards", 10*time.Second-time.Since(lastStart), func(own []string) bool {
		c := ownerCounts(own)
		for _, id := range ids {
			if c[id] < 5 || c[id] > 6 {
				return false
			}
		}
		return c[ids[0]]+c[ids[1]]+c[ids[2]] == 16
	})
	t.Logf("balanced %v %.1f s after the last start", ownerCounts(mustOwners(t, ctx, js)), time.Since(lastStart).Seconds())

	if err := ins[0].stop(t, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	took := within("the other two own all 16 shards", 10*time.Second, func(own []string) bool {
		c := ownerCounts(own)
		return c[ids[1]]+c[ids[2]] == 16 && c[ids[1]] == 8
	})
	t.Logf("killed instance's shards taken over in %.1f s: %v", took.Seconds(), ownerCounts(mustOwners(t, ctx, js)))

	// SIGTERM: the instance releases its leases and exits; the last one
	// standing takes them at once (well before a lease TTL).
	stopped := time.Now()
	if err := ins[1].stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	within("the last instance owns all 16 shards", 4*time.Second, func(own []string) bool {
		return ownerCounts(own)[ids[2]] == 16
	})
	t.Logf("SIGTERM to exit and handoff in %.1f s", time.Since(stopped).Seconds())

	// The operator's view: one line per change, naming the shard.
	for _, in := range ins[1:] {
		acquired, released := in.lines(`msg="shard acquired"`), in.lines(`msg="shard released"`)
		t.Logf("%s: %d acquired, %d released; e.g. %s", in.name, len(acquired), len(released), first(acquired))
		if len(acquired) < 5 {
			t.Errorf("%s logged %d acquisitions", in.name, len(acquired))
		}
	}
	if n := len(ins[1].lines(`reason=shutdown`)); n != 8 {
		t.Errorf("%s logged %d releases on SIGTERM, want 8 (its shards)", ins[1].name, n)
	}
	if err := ins[2].stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if own := mustOwners(t, ctx, js); len(ownerCounts(own)) != 1 || own[0] != "" {
		t.Errorf("leases left after every instance stopped: %v", ownerCounts(own))
	}
}

func mustOwners(t *testing.T, ctx context.Context, js jetstream.JetStream) []string {
	t.Helper()
	own, err := owners(ctx, js, 16)
	if err != nil {
		t.Fatal(err)
	}
	return own
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
