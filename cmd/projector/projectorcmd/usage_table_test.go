package projectorcmd

import (
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
)

// TestUsageFromTable: every command of projectorCommands appears in
// projector --help exactly once, with its own usage line, and its own
// --help opens with that same line: the texts are generated, so they
// cannot drift.
func TestUsageFromTable(t *testing.T) {
	overview := clitest.Help(t, Run, "--help")
	for _, s := range projectorCommands {
		t.Run("projector "+s.Name, func(t *testing.T) {
			if n := strings.Count(overview, s.Line("projector")+"\n") + strings.Count(overview, s.Line("projector")+"   "); n != 1 {
				t.Errorf("%q stands %d times in --help, want once:\n%s", s.Line("projector"), n, overview)
			}
			if s.Name != "" {
				clitest.OpensWithUsage(t, "projector", Run, s)
			}
		})
	}
}

// TestHelpUsageVersion: projector --help goes to stdout and exits 0, a
// command-line mistake prints one line to stderr and exits 2, and
// --version prints the version to stdout.
func TestHelpUsageVersion(t *testing.T) {
	clitest.HelpUsageVersion(t, "projector", Run, nil)
}
