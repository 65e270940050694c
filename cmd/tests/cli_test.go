// Package cli_test holds the tests that cross commands: the writer
// publishes, the projector applies, replay reads, and what every command
// shares (--help, secrets, version). They run the commands' packages
// (cmd/*/…cmd) in process against real servers; the tests of one command
// stay beside it.
package cli_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
	"github.com/tablejournal/tablejournal/cmd/writer/writercmd"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// commands are the three commands by program name.
var commands = map[string]cli.Command{"replay": replaycmd.Run, "writer": writercmd.Run, "projector": projectorcmd.Run}

// runWriter runs the writer command with args and returns its output and
// exit code.
func runWriter(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(journaltest.Context(t, time.Minute), writercmd.Run, args, cli.IO{})
}

// TestHelpGolden keeps the --help of every command and subcommand in
// testdata/help.txt, so a change to a usage text shows in review.
func TestHelpGolden(t *testing.T) {
	// Not parallel: it sets environment variables.
	for _, env := range []string{cli.EnvNATS, cli.EnvNATSCreds, cli.EnvNATSNkey, cli.EnvNATSUser, cli.EnvNATSPassword, cli.EnvTables, cli.EnvAuth, cli.EnvCAFile, cli.EnvData, cli.EnvStream, projectorcmd.EnvReplicas, projectorcmd.EnvMetricsAddr} {
		t.Setenv(env, "")
	}
	clitest.RunGolden(t, filepath.Join("testdata", "help.txt"), &clitest.Normalizer{KeepPorts: true}, func(args []string) (string, string, int) {
		return clitest.Run(t.Context(), commands[args[0]], args[1:], cli.IO{})
	})
}
