package replaycmd

import (
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
)

// TestUsageFromTable: every subcommand of replayCommands appears in
// replay --help exactly once, with its own usage line, and its own --help
// opens with that same line: the texts are generated, so they cannot
// drift.
func TestUsageFromTable(t *testing.T) {
	overview := clitest.Help(t, Run, "--help")
	for _, e := range replayCommands {
		t.Run("replay "+e.Name, func(t *testing.T) {
			clitest.Once(t, overview, "  "+e.Line("replay"))
			clitest.OpensWithUsage(t, "replay", Run, e.Spec)
		})
	}
}

// TestHelpUsageVersion: on replay and each of its subcommands --help goes
// to stdout and exits 0, a command-line mistake prints one line to stderr
// and exits 2, and --version prints the version to stdout.
func TestHelpUsageVersion(t *testing.T) {
	t.Run("replay", func(t *testing.T) { clitest.HelpUsageVersion(t, "replay", Run, nil) })
	for _, rc := range replayCommands {
		t.Run("replay "+rc.Name, func(t *testing.T) { clitest.HelpUsageVersion(t, "replay", Run, []string{rc.Name}) })
	}
}
