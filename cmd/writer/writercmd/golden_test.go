package writercmd

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// TestWriterGolden publishes commands with the writer, as text and as
// JSON, and waits for a projector's outcomes, against
// testdata/writer.txt.
func TestWriterGolden(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, true)
	norm := &clitest.Normalizer{Tmp: t.TempDir()}
	clitest.RunGolden(t, filepath.Join("testdata", "writer.txt"), norm, func(args []string) (string, string, int) {
		if args[0] != "writer" {
			t.Fatalf("not a writer command: %v", args)
		}
		stdio := cli.IO{Now: func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }}
		return clitest.Run(journaltest.Context(t, time.Minute), Run, append(args[1:], "--nats", e.url), stdio)
	})
}

// TestUsageFromTable: every command of writerCommands appears in writer
// --help exactly once (an operation under its OP line, listed with its
// summary), and its own --help opens with its usage line: the texts are
// generated, so they cannot drift.
func TestUsageFromTable(t *testing.T) {
	overview := clitest.Help(t, Run, "--help")
	for _, e := range writerCommands {
		t.Run("writer "+e.Name, func(t *testing.T) {
			if e.op == "" {
				clitest.Once(t, overview, "  "+e.Line("writer"))
				return
			}
			clitest.Once(t, overview, "  "+cli.NewSpec("OP", e.Usage, "").Line("writer"))
			// The operation is listed once, with its summary.
			listed := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(e.Name) + ` +` + regexp.QuoteMeta(e.Summary) + `$`)
			if n := len(listed.FindAllString(overview, -1)); n != 1 {
				t.Errorf("operation %s listed %d times, want once:\n%s", e.Name, n, overview)
			}
		})
	}
}

// TestHelpUsageVersion: on writer's two forms --help goes to stdout and
// exits 0, a command-line mistake prints one line to stderr and exits 2,
// and --version prints the version to stdout.
func TestHelpUsageVersion(t *testing.T) {
	for _, sub := range []string{"upsert", "apply"} {
		t.Run("writer "+sub, func(t *testing.T) { clitest.HelpUsageVersion(t, "writer", Run, []string{sub}) })
	}
}
