package upgrade_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store/azure"
	"github.com/tablejournal/tablejournal/wire"
)

// TestUpgradeInPlace runs one deployment (a JetStream server, Azurite)
// through an upgrade and a rollback with the processes of two releases:
//
//  1. the previous release's projector applies what its writer publishes
//     (--wait): applied commands, a rejection, a row with personal data;
//  2. with no projector running, this release's readers read what the old
//     one wrote: the client's Wait (applied and rejected) and Follow,
//     replay blame and verify, the console's command page;
//  3. this release's projector continues the old one's journal in place:
//     the new writer and the new client's Apply (the reply) and the old
//     writer --wait (the stored outcome) against it, a republished old ID
//     stays a duplicate, replay erase removes the old release's personal
//     data from every stream;
//  4. rollback: the previous release's projector continues the new one's
//     journal, the old writer and the new writer (no reply comes: the
//     stored outcome answers) and the new client's Apply against it; the
//     old replay verifies what the new projector wrote.
//
// Throughout, one Follow of this release reads the change feed across the
// three projectors: every version of the row once, in order.
func TestUpgradeInPlace(t *testing.T) {
	ctx := journaltest.Context(t, 4*time.Minute)
	d := newDeployment(t, ctx)
	orders, customers := d.table("orders"), d.table("customers")
	const pk, rk = "shop-1", "order-1"
	const secret = "alice-secret-4711@example.org"

	// 1. The previous release writes.
	old := d.startProjector(previous)
	d.waitStreams()
	// The one follower of the whole upgrade, started before any change.
	client := d.client()
	feed := d.follow(client, "upgrade", orders)
	o1 := d.write(previous, 0, "insert", "--table", orders, "--pk", pk, "--rk", rk, "--id", "o1", "--set", "status=new", "--set", "qty:int64=1")
	o2 := d.write(previous, 0, "merge", "--table", orders, "--pk", pk, "--rk", rk, "--id", "o2", "--set", "status=paid")
	o3 := d.write(previous, 3, "insert", "--table", orders, "--pk", pk, "--rk", rk, "--id", "o3", "--set", "status=again")
	d.write(previous, 0, "upsert", "--table", customers, "--pk", "alice", "--rk", "profile", "--id", "o4", "--set", "email="+secret)
	wantApplied(t, o1, rk, 0)
	wantApplied(t, o2, rk, 1)
	if o3.Outcome == nil || o3.Outcome.Status != wire.StatusRejected || o3.Outcome.Code != wire.CodeExists {
		t.Fatalf("o3, an insert of an existing row, by the previous release: %+v, want rejected %s", o3, wire.CodeExists)
	}
	old.stop(t)

	// 2. This release's readers, on what the previous one wrote.
	t.Run("readers of the previous release's records", func(t *testing.T) {
		out, err := client.Wait(ctx, tj.Position{ID: "o2", Seq: o2.Seq})
		if err != nil || out.Status != tj.Applied || len(out.Rows) != 1 || out.Rows[0].Version != 1 {
			t.Errorf("Wait o2: %+v, %v; want applied, %s version 1", out, err, rk)
		}
		if _, err := client.Wait(ctx, tj.Position{ID: "o3", Seq: o3.Seq}); !errors.Is(err, tj.ErrExists) {
			t.Errorf("Wait o3: %v, want a rejection matching ErrExists", err)
		}
		feed.waitVersions(t, 2)
		d.wantBlame(t, current, "o2", rk, 1, `"paid"`)
		d.wantVerified(t, current, orders, 3)
		d.wantCommandPage(t, "o2", rk)
	})

	// 3. This release's projector continues the journal in place.
	t.Run("current projector continues the previous one's journal", func(t *testing.T) {
		p := d.startProjector(current)
		defer p.stop(t)
		wantApplied(t, d.write(current, 0, "merge", "--table", orders, "--pk", pk, "--rk", rk, "--id", "n1", "--set", "status=shipped"), rk, 2)
		// The old writer waits for the stored outcome, which this release
		// still writes for every command.
		wantApplied(t, d.write(previous, 0, "merge", "--table", orders, "--pk", pk, "--rk", rk, "--id", "o5", "--set", "status=packed"), rk, 3)
		// A command the previous release applied, published again with
		// its body: the same command, applied once.
		again := d.write(current, 0, "insert", "--table", orders, "--pk", pk, "--rk", rk, "--id", "o1", "--set", "status=new", "--set", "qty:int64=1")
		if !again.Duplicate || again.Seq != o1.Seq {
			t.Errorf("o1 published again: %+v, want a duplicate of seq %d", again, o1.Seq)
		}
		out, err := client.Apply(ctx, tj.NewCommand(orders, pk).WithID("n2").Merge(rk, tj.Entity{"status": tj.String("delivered")}))
		if err != nil || out.Status != tj.Applied || len(out.Rows) != 1 || out.Rows[0].Version != 4 {
			t.Errorf("Apply n2: %+v, %v; want applied, version 4", out, err)
		}
		// The erase of a key the previous release wrote.
		if _, stderr, code := d.replay(current, "erase", "--table", customers, "--pk", "alice", "--apply"); code != 0 {
			t.Fatalf("replay erase of the previous release's key: exit %d\n%s", code, stderr)
		}
		for _, at := range journaltest.StreamsHolding(t, ctx, d.js, []byte(secret)) {
			t.Errorf("%s still holds the erased values the previous release wrote", at)
		}
		feed.waitVersions(t, 5)
		d.wantBlame(t, current, "n1", rk, 2, `"shipped"`)
		d.wantVerified(t, current, orders, 6)
	})

	// 4. Rollback: the previous release's projector continues.
	t.Run("previous projector continues the current one's journal", func(t *testing.T) {
		p := d.startProjector(previous)
		wantApplied(t, d.write(previous, 0, "merge", "--table", orders, "--pk", pk, "--rk", rk, "--id", "o6", "--set", "status=returned"), rk, 5)
		// No reply comes from the previous release: the new writer and
		// client read the stored outcome.
		start := time.Now()
		wantApplied(t, d.write(current, 0, "merge", "--table", orders, "--pk", pk, "--rk", rk, "--id", "n3", "--set", "status=refunded"), rk, 6)
		t.Logf("the current writer --wait against the previous projector: %s", time.Since(start).Round(time.Millisecond))
		out, err := client.Apply(ctx, tj.NewCommand(orders, pk).WithID("n4").Merge(rk, tj.Entity{"status": tj.String("closed")}))
		if err != nil || out.Status != tj.Applied || len(out.Rows) != 1 || out.Rows[0].Version != 7 {
			t.Errorf("Apply n4 against the previous projector: %+v, %v; want applied, version 7", out, err)
		}
		p.stop(t)
		d.wantVerified(t, previous, orders, 9)
		d.wantVerified(t, current, orders, 9)
		d.wantBlame(t, current, "o6", rk, 5, `"returned"`)
	})

	// One change per version, in order, from three projectors of two
	// releases, to one follower.
	got := feed.waitVersions(t, 8)
	wantCmds := []string{"o1", "o2", "n1", "o5", "n2", "o6", "n3", "n4"}
	for i, c := range got {
		if c.PK != pk || c.RK != rk || c.Version != int64(i) || c.Command != wantCmds[i] {
			t.Errorf("change %d: %s/%s version %d by %s, want %s/%s version %d by %s", i, c.PK, c.RK, c.Version, c.Command, pk, rk, i, wantCmds[i])
		}
	}
	if len(got) > 0 && (got[0].Op != tj.Created || !got[0].After["status"].Equal(tj.String("new"))) {
		t.Errorf("first change: %s %v, want created with status new", got[0].Op, got[0].After)
	}
}

// A deployment is one JetStream server and one Azurite account that the
// releases' processes share, as one production deployment would.
type deployment struct {
	t       *testing.T
	ctx     context.Context
	natsURL string
	tables  string // the Azure connection string
	data    string // the projectors' --data folder, the same for every one
	js      jetstream.JetStream
	run     string // a suffix that makes this run's table names its own
}

func newDeployment(t *testing.T, ctx context.Context) *deployment {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	return &deployment{t: t, ctx: ctx, natsURL: srv.ClientURL(), tables: azuriteSrv.ConnectionString(), data: t.TempDir(), js: js,
		// Azurite outlives a run (go test -count): tables of its own.
		run: fmt.Sprint(time.Now().UnixNano() % 1e9)}
}

func (d *deployment) table(name string) string { return name + d.run }

// env is the environment of the commands: this process's without the
// commands' own variables, so that only the flags the test gives count.
func env() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TABLEJOURNAL_") })
}

// client connects this release's client to the deployment.
func (d *deployment) client() *tj.Client {
	st, err := azure.New(azure.Config{ConnectionString: d.tables})
	if err != nil {
		d.t.Fatal(err)
	}
	c, err := tj.Connect(d.ctx, d.natsURL, tj.WithStore(st))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { c.Close() })
	return c
}

// waitStreams waits until the projector has created the journal and
// outcome streams, which a writer needs.
func (d *deployment) waitStreams() {
	deadline := time.Now().Add(time.Minute)
	for _, name := range []string{wire.JournalStream, wire.OutcomesStream, wire.ChangesStream} {
		for {
			_, err := d.js.Stream(d.ctx, name)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				d.t.Fatalf("the projector has not created stream %s in a minute: %v", name, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// proc is a running projector process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *projectiontest.SyncBuffer
	done   chan error
}

// startProjector starts rel's projector on the deployment; the test's end
// kills it if it still runs.
func (d *deployment) startProjector(rel release) *proc {
	d.t.Helper()
	// A journal that allows an erase to delete messages (SPEC §10), in
	// both releases.
	cmd := exec.Command(rel.projector, "--nats", d.natsURL, "--tables", d.tables, "--data", d.data, "--log-level", "warn",
		"--journal-allow-msg-delete")
	cmd.Env = env()
	p := &proc{name: rel.name + " projector", cmd: cmd, stderr: &projectiontest.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	d.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop stops the projector as an operator would (SIGTERM) and fails the
// test unless it exits cleanly within a minute.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop the %s: %v", p.name, err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("the %s exited with %v:\n%s", p.name, err, p.stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the %s did not stop within a minute of SIGTERM:\n%s", p.name, p.stderr.String())
	}
	if t.Failed() {
		t.Logf("the %s's log:\n%s", p.name, p.stderr.String())
	}
}

// written is what `writer --json` prints for one command, in both
// releases.
type written struct {
	ID        string        `json:"id"`
	Seq       uint64        `json:"seq"`
	Duplicate bool          `json:"duplicate"`
	Outcome   *wire.Outcome `json:"outcome"`
	Error     string        `json:"error"`
}

// write runs rel's writer with args, --wait and --json, requires exit code
// wantCode and returns what it printed.
func (d *deployment) write(rel release, wantCode int, args ...string) written {
	d.t.Helper()
	stdout, stderr, code := d.exec(rel.writer, append(args, "--nats", d.natsURL, "--wait", "--json", "--timeout", "1m")...)
	if code != wantCode {
		d.t.Fatalf("%s writer %s: exit %d, want %d\nstdout: %s\nstderr: %s", rel.name, strings.Join(args, " "), code, wantCode, stdout, stderr)
	}
	var w written
	if err := json.Unmarshal([]byte(lastLine(stdout)), &w); err != nil {
		d.t.Fatalf("%s writer %s: %v in its output %q", rel.name, strings.Join(args, " "), err, stdout)
	}
	return w
}

// wantApplied requires w's outcome to be an application of one version of
// row rk.
func wantApplied(t *testing.T, w written, rk string, version int64) {
	t.Helper()
	o := w.Outcome
	if o == nil || o.Status != wire.StatusApplied || len(o.Rows) != 1 || o.Rows[0].RK != rk || o.Rows[0].Version != version {
		t.Fatalf("%s: %+v (outcome %+v), want applied, %s version %d", w.ID, w, o, rk, version)
	}
}

// replay runs rel's replay with args on the deployment.
func (d *deployment) replay(rel release, args ...string) (stdout, stderr string, code int) {
	return d.exec(rel.replay, append(args, "--nats", d.natsURL, "--tables", d.tables)...)
}

// exec runs a command to its end (within the test's context) and returns
// its output and exit code.
func (d *deployment) exec(bin string, args ...string) (stdout, stderr string, code int) {
	d.t.Helper()
	cmd := exec.CommandContext(d.ctx, bin, args...)
	cmd.Env = env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// wantBlame requires rel's replay blame of command id to show it applied,
// with row rk at version, holding want (a JSON value) in its properties.
func (d *deployment) wantBlame(t *testing.T, rel release, id, rk string, version int64, want string) {
	t.Helper()
	stdout, stderr, code := d.replay(rel, "blame", "--cmd", id, "--json")
	if code != 0 {
		t.Errorf("%s replay blame --cmd %s: exit %d\n%s", rel.name, id, code, stderr)
		return
	}
	var b struct {
		Outcome  wire.Outcome `json:"outcome"`
		Versions []struct {
			RK      string          `json:"rk"`
			Version int64           `json:"version"`
			Cmd     string          `json:"cmd"`
			Entity  json.RawMessage `json:"entity"`
		} `json:"versions"`
	}
	if err := json.Unmarshal([]byte(stdout), &b); err != nil {
		t.Errorf("%s replay blame --cmd %s: %v in %q", rel.name, id, err, stdout)
		return
	}
	if b.Outcome.Status != wire.StatusApplied || len(b.Versions) != 1 || b.Versions[0].RK != rk || b.Versions[0].Version != version ||
		b.Versions[0].Cmd != id || !bytes.Contains(b.Versions[0].Entity, []byte(want)) {
		t.Errorf("%s replay blame --cmd %s: %s\nwant applied, %s version %d holding %s", rel.name, id, stdout, rk, version, want)
	}
}

// wantVerified requires rel's replay verify of table to find it identical
// to its journal, with rows stored rows (the row, and one per version).
func (d *deployment) wantVerified(t *testing.T, rel release, table string, rows int64) {
	t.Helper()
	stdout, stderr, code := d.replay(rel, "verify", "--table", table, "--json")
	var v struct {
		Identical bool  `json:"identical"`
		Rows      int64 `json:"rows"`
	}
	if code != 0 || json.Unmarshal([]byte(lastLine(stdout)), &v) != nil || !v.Identical || v.Rows != rows {
		t.Errorf("%s replay verify --table %s: exit %d, want 0, identical, %d rows\nstdout: %s\nstderr: %s", rel.name, table, code, rows, stdout, stderr)
	}
}

// wantCommandPage serves this release's console (replay console) and
// requires its page of command id to show it, with row rk.
func (d *deployment) wantCommandPage(t *testing.T, id, rk string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, current.replay, "console", "--addr", "127.0.0.1:0", "--nats", d.natsURL, "--tables", d.tables)
	cmd.Env = env()
	var stderr projectiontest.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	// Its first line: "console: http://127.0.0.1:PORT/".
	line, err := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "console: ")
	if err != nil || !ok {
		t.Fatalf("replay console printed %q (%v), want its URL\n%s", line, err, stderr.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"command?id="+url.QueryEscape(id), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(id)) || !bytes.Contains(body, []byte(rk)) || !bytes.Contains(body, []byte("applied")) {
		t.Errorf("console /command?id=%s: %s, want 200 naming %s, %s and applied\n%s", id, resp.Status, id, rk, body)
	}
}

// A feed is one Follow of this release's client, running in the
// background for the whole test.
type feed struct {
	mu      sync.Mutex
	changes []tj.Change
	err     error
	done    bool
}

// follow starts Follow of table under the checkpoint name; the test's end
// stops it.
func (d *deployment) follow(c *tj.Client, name, table string) *feed {
	f := &feed{}
	ctx, cancel := context.WithCancel(d.ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		err := c.Follow(ctx, name, table, func(_ context.Context, ch tj.Change) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.changes = append(f.changes, ch)
			return nil
		})
		f.mu.Lock()
		f.err, f.done = err, true
		f.mu.Unlock()
	}()
	d.t.Cleanup(func() { cancel(); <-stopped })
	return f
}

// waitVersions waits until the follower has n changes, and returns them.
// More than n (a change delivered twice) fails the test.
func (f *feed) waitVersions(t *testing.T, n int) []tj.Change {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		f.mu.Lock()
		got, err, done := slices.Clone(f.changes), f.err, f.done
		f.mu.Unlock()
		switch {
		case len(got) > n:
			t.Fatalf("the follower has %d changes, want %d: %+v", len(got), n, got)
		case len(got) == n:
			return got
		case done:
			t.Fatalf("Follow ended (%v) with %d changes of %d", err, len(got), n)
		case time.Now().After(deadline):
			t.Fatalf("the follower has %d changes after a minute, want %d: %+v", len(got), n, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
