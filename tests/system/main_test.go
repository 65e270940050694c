package system_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tablejournal/tablejournal/internal/azurite"
)

var (
	azuriteSrv *azurite.Server
	// projectorBin is the path of the projector binary built for this run.
	projectorBin string
)

// TestMain builds the projector command into a temporary folder (with
// -race when this test binary has it), starts one Azurite, and runs the
// tests.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tablejournal-system-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	projectorBin, err = build(dir, "projector")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return azurite.Run(m, &azuriteSrv)
}

// build runs `go build` of cmd/name into dir and returns the binary's path.
func build(dir, name string) (string, error) {
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if raceBuild {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/tablejournal/tablejournal/cmd/"+name)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build cmd/%s: %w", name, err)
	}
	return out, nil
}
