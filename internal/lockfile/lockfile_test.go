package lockfile_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/internal/lockfile"
)

// envChild names the lock file the child process of TestOtherProcess holds.
const envChild = "TABLEJOURNAL_LOCKFILE_CHILD"

// TestMain turns the re-executed test binary into the child: it takes the
// lock, says so, and holds it until it is killed or its stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv(envChild); path != "" {
		l, err := lockfile.Acquire(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("held")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A lock held by another process refuses this one, naming the holder's
// pid; once the holder is SIGKILLed the kernel has dropped the lock and it
// can be taken at once.
func TestOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("child: %q, %v", line, err)
	}

	_, err = lockfile.Acquire(path)
	if !errors.Is(err, lockfile.ErrLocked) {
		t.Fatalf("second process: %v, want ErrLocked", err)
	}
	var le *lockfile.LockedError
	if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
		t.Fatalf("holder %+v, want pid %d", le, cmd.Process.Pid)
	}
	host, _ := os.Hostname()
	if le.Holder.Host != host || le.Holder.Since.IsZero() {
		t.Errorf("holder %+v: want host %q and a start time", le.Holder, host)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Errorf("message %q names neither the file nor the pid", msg)
	}

	// SIGKILL: no chance to release, and still no stale lock.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	_ = stdin.Close()
	l, err := lockfile.Acquire(path)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// The lock is per open file: the same process cannot take it twice, and
// can once it released it.
func TestSameProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	l, err := lockfile.Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockfile.Acquire(path)
	var le *lockfile.LockedError
	if !errors.As(err, &le) || le.Holder.PID != os.Getpid() {
		t.Fatalf("second Acquire: %v, want a *LockedError naming pid %d", err, os.Getpid())
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := lockfile.Acquire(path)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	_ = l2.Release()
	if err := l.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
}
