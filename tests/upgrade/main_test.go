package upgrade_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/internal/azurite"
)

// previousRelease is the commit of the release before contract v2 (SPEC
// §5, "The reply before the durable record"): the release a deployment
// upgrades from. The repository has no tags; docs/operating.md names it.
const previousRelease = "e47be31"

// A release is the paths of one release's three commands.
type release struct {
	name                      string
	projector, writer, replay string
}

var (
	azuriteSrv *azurite.Server
	// previous and current are built once per test binary by TestMain.
	previous, current release
)

// TestMain builds the previous release's commands from the git history and
// this tree's, once for the whole test binary, starts one Azurite and runs
// the tests.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tablejournal-upgrade-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if previous, err = buildPrevious(dir); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	if current, err = buildRelease(dir, "current", "", "github.com/tablejournal/tablejournal"); err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	return azurite.Run(m, &azuriteSrv)
}

// buildPrevious extracts previousRelease's tree from the git history into
// dir (git archive: no checkout, no change to the work tree) and builds its
// commands there.
func buildPrevious(dir string) (release, error) {
	root, err := gitOut("", "rev-parse", "--show-toplevel")
	if err != nil {
		return release{}, fmt.Errorf("the upgrade test builds the previous release (%s) from the git history, and there is none here: %w", previousRelease, err)
	}
	if _, err := gitOut(root, "cat-file", "-e", previousRelease+"^{commit}"); err != nil {
		return release{}, fmt.Errorf("the git history lacks commit %s, the previous release the upgrade test builds (a shallow clone? run `git fetch --unshallow`): %w", previousRelease, err)
	}
	src := filepath.Join(dir, "previous-src")
	tarball := filepath.Join(dir, "previous.tar")
	if _, err := gitOut(root, "archive", "--format=tar", "-o", tarball, previousRelease); err != nil {
		return release{}, err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return release{}, err
	}
	if out, err := exec.Command("tar", "-xf", tarball, "-C", src).CombinedOutput(); err != nil {
		return release{}, fmt.Errorf("tar -xf %s: %w\n%s", tarball, err, out)
	}
	return buildRelease(dir, "previous", src, ".")
}

// buildRelease builds the projector, writer and replay commands of the
// module in src (the current folder's when "") into dir/name.
func buildRelease(dir, name, src, module string) (release, error) {
	bin := filepath.Join(dir, name)
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return release{}, err
	}
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	for _, c := range []string{"projector", "writer", "replay"} {
		args = append(args, module+"/cmd/"+c)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	// The extracted tree is a module of its own, outside any workspace.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return release{}, fmt.Errorf("go build of the %s release's commands: %w\n%s", name, err, out.String())
	}
	exe := func(c string) string {
		p := filepath.Join(bin, c)
		if _, err := os.Stat(p + ".exe"); err == nil {
			return p + ".exe"
		}
		return p
	}
	return release{name: name, projector: exe("projector"), writer: exe("writer"), replay: exe("replay")}, nil
}

// gitOut runs git in dir and returns its trimmed standard output.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || stderr.Len() > 0 {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
