// Package deploytest holds what the image test (deploy/ociimage) and the
// manifest test (deploy) share: the module's folder, and a projector
// binary started on embedded defaults in a temporary folder, with its
// metrics and health listener on a free loopback port.
package deploytest

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
)

// ModuleDir is the folder of the module the test runs in (go env GOMOD).
func ModuleDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		return "", fmt.Errorf("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod), nil
}

// Projector is a projector binary a test started.
type Projector struct {
	cmd *exec.Cmd
	// Stderr is its log.
	Stderr *projectiontest.SyncBuffer
	// Metrics is its metrics and health listener, host:port.
	Metrics string
	exited  chan error // Wait's result, put back once read
}

// metricsURL finds the metrics address in the startup line, logged as
// text (metrics=http://...) or JSON ("metrics":"http://...").
var metricsURL = regexp.MustCompile(`metrics[=":]+http://(127\.0\.0\.1:\d+)/metrics`)

// StartProjector starts the projector binary bin on its embedded server
// and store in a temporary --data folder, the server and the metrics
// listener on free loopback ports, with the extra args after those, and
// waits for its startup line. It is killed in t.Cleanup if still running.
func StartProjector(t *testing.T, bin string, extra ...string) *Projector {
	t.Helper()
	args := append([]string{"--data", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--no-fsync", "--metrics-addr", "127.0.0.1:0"}, extra...)
	p := &Projector{cmd: exec.Command(bin, args...), Stderr: &projectiontest.SyncBuffer{}}
	p.cmd.Stderr = p.Stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	p.exited = exited
	go func() { exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		exited <- <-exited
	})
	ctx := journaltest.Context(t, time.Minute)
	projectiontest.WaitFor(t, ctx, "the projector's startup line naming its metrics address", func() (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, fmt.Errorf("exited: %v\n%s", err, p.Stderr)
		default:
		}
		m := metricsURL.FindStringSubmatch(p.Stderr.String())
		if m != nil {
			p.Metrics = m[1]
		}
		return m != nil, nil
	})
	return p
}

// Stop sends SIGTERM and waits for the projector to exit, failing the
// test unless it exits 0 within ctx.
func (p *Projector) Stop(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Fatalf("projector after SIGTERM: %v\n%s", err, p.Stderr)
		}
	case <-ctx.Done():
		t.Fatalf("projector did not exit after SIGTERM: %v\n%s", ctx.Err(), p.Stderr)
	}
}

// WaitStatus waits until a GET of path on the projector's metrics
// listener answers code, failing the test with its log at ctx's end.
func (p *Projector) WaitStatus(t *testing.T, ctx context.Context, path string, code int) {
	t.Helper()
	projectiontest.WaitFor(t, ctx, fmt.Sprintf("GET %s answering %d", path, code), func() (bool, error) {
		if got := Get(ctx, "http://"+p.Metrics+path); got != code {
			return false, fmt.Errorf("status %d\n%s", got, p.Stderr)
		}
		return true, nil
	})
}

// Get is the status code of a GET of url, 0 when there is none.
func Get(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
