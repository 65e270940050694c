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

	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/internal/cli"
	"github.com/tablejournal/tablejournal/internal/lockfile"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/store/sqlite"
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
		want error
		says []string
	}{
		{"own embedded server", []string{"--data", data, "--nats-listen", "127.0.0.1:0"}, lockfile.ErrLocked, []string{data, pid}},
		{"embedded store only", []string{"--data", data, "--nats", url}, lockfile.ErrLocked, []string{data, pid}},
		{"the store file, with a server of its own", []string{"--data", t.TempDir(), "--nats-listen", "127.0.0.1:0", "--tables", "sqlite:" + filepath.Join(data, "tables.db")},
			sqlite.ErrLocked, []string{filepath.Join(data, "tables.db"), pid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			err := projectorcmd.Run(ctx, append(tc.args, "--log-level", "error"), cli.IO{Stdout: io.Discard, Stderr: &stderr})
			if !errors.Is(err, tc.want) {
				t.Fatalf("second projector: %v, want %v", err, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if code := cli.Exit(err, io.Discard); code != cli.ExitFailure {
				t.Errorf("exit code %d, want %d", code, cli.ExitFailure)
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
