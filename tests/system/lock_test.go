//go:build linux

package system_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// startProjectorProcess runs the projector binary and returns once it
// logged that it runs, with the embedded server's URL.
func startProjectorProcess(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(projectorBin, args...)
	cmd.SysProcAttr = childAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urlRE := regexp.MustCompile(`url=(nats://\S+)`)
	lines := bufio.NewScanner(stderr)
	url := ""
	for lines.Scan() {
		line := lines.Text()
		if m := urlRE.FindStringSubmatch(line); m != nil {
			url = m[1]
		}
		if strings.Contains(line, "projector running") {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return cmd, url
		}
	}
	t.Fatalf("the projector process ended before it ran: %v", lines.Err())
	return nil, ""
}

// A second projector on the data folder of a running one refuses to start,
// naming the folder and the holder's pid, whether it would start its own
// embedded server there or only use the embedded store; one with a server
// of its own that names the running one's store file with --tables is
// refused too (it would project another journal into the same tables),
// while an instance on the first one's server may share it. After the
// first is killed with SIGKILL, the folder is free at once.
func TestSecondProjector(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a projector process")
	}
	data := t.TempDir()
	first, url := startProjectorProcess(t, "--data", data, "--nats-listen", "127.0.0.1:0", "--log-level", "info")
	if url == "" {
		t.Fatal("the first projector logged no server URL")
	}
	pid := fmt.Sprintf("pid %d", first.Process.Pid)

	ctx := journaltest.Context(t, time.Minute)
	for _, tc := range []struct {
		name string
		args []string
		says []string
	}{
		{"own embedded server", []string{"--data", data, "--nats-listen", "127.0.0.1:0"}, []string{data, pid}},
		{"embedded store only", []string{"--data", data, "--nats", url}, []string{data, pid}},
		{"the store file, with a server of its own", []string{"--data", t.TempDir(), "--nats-listen", "127.0.0.1:0", "--tables", "sqlite:" + filepath.Join(data, "tables.db")}, []string{filepath.Join(data, "tables.db"), pid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The binary, as an operator runs it: exit 1 and a message naming
			// the locked path and the holder's pid.
			cmd := exec.CommandContext(ctx, projectorBin, append(tc.args, "--log-level", "error")...)
			cmd.SysProcAttr = childAttr()
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("second projector: %v, want exit status 1; it said:\n%s", err, out)
			}
			for _, s := range tc.says {
				if !strings.Contains(string(out), s) {
					t.Errorf("second projector said %q, not %q", out, s)
				}
			}
		})
	}

	// An instance on the first one's server may share its store file: the
	// two split the shards (startProjectorProcess fails unless it runs).
	shared, _ := startProjectorProcess(t, "--data", t.TempDir(), "--nats", url, "--tables", "sqlite:"+filepath.Join(data, "tables.db"))
	if err := shared.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = shared.Wait()

	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	// startProjectorProcess fails the test unless this one runs.
	startProjectorProcess(t, "--data", data, "--nats-listen", "127.0.0.1:0")
}
