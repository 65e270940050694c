package sqlite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envOwner names the file the child process of TestExclusiveOtherProcess
// opens with Exclusive.
const envOwner = "TABLEJOURNAL_SQLITE_OWNER"

// TestChildOwner is the owning process of TestExclusiveOtherProcess: it
// opens the store exclusively, says so, and keeps it until it is killed.
func TestChildOwner(t *testing.T) {
	path := os.Getenv(envOwner)
	if path == "" {
		t.Skip("the owning process of TestExclusiveOtherProcess")
	}
	s, err := Open(context.Background(), path, Exclusive())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println("owner")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

// A store file opened with Exclusive by another process refuses a second
// owner, naming the holder, while a plain Open (the replay tools) still
// reads it; once the owner is SIGKILLed the file can be owned at once.
func TestExclusiveOtherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "owned.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildOwner$", "-test.count=1")
	cmd.Env = append(os.Environ(), envOwner+"="+path)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = stdin.Close() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "owner" {
		t.Fatalf("child: %q, %v", line, err)
	}

	_, err = Open(ctx, path, Exclusive())
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second owner: %v, want ErrLocked", err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Errorf("message %q names neither the file nor the holder's pid %d", msg, cmd.Process.Pid)
	}
	reader := open(t, path)
	if _, err := reader.ListTables(ctx); err != nil {
		t.Fatalf("a plain Open beside the owner: %v", err)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	s, err := Open(ctx, path, Exclusive())
	if err != nil {
		t.Fatalf("after the owner was killed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed, the file can be owned again, in this process too.
	s, err = Open(ctx, path, Exclusive())
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	_ = s.Close()
}
