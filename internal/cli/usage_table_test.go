package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestUsageFromTable: every command of the tables appears in its
// program's --help exactly once, with its own usage line, and its own
// --help opens with that same line: the texts are generated, so they
// cannot drift.
func TestUsageFromTable(t *testing.T) {
	help := func(cmd Command, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Exit(cmd(context.Background(), args, IO{Stdout: &out, Stderr: &errb}), &errb); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	once := func(t *testing.T, text, line string) {
		t.Helper()
		if n := strings.Count(text, line+"\n"); n != 1 {
			t.Errorf("%q stands %d times in --help, want once:\n%s", line, n, text)
		}
	}

	overview := help(Replay, "--help")
	for _, e := range replayCommands {
		t.Run("replay "+e.name, func(t *testing.T) {
			once(t, overview, "  "+e.line("replay"))
			if own := help(Replay, e.name, "--help"); !strings.HasPrefix(own, "Usage: "+e.line("replay")+"\n") {
				t.Errorf("replay %s --help does not open with its usage line:\n%s", e.name, own)
			}
		})
	}

	overview = help(Writer, "--help")
	for _, e := range writerCommands {
		t.Run("writer "+e.name, func(t *testing.T) {
			if e.op == "" {
				once(t, overview, "  "+e.line("writer"))
				return
			}
			once(t, overview, "  "+(spec{"OP", e.usage, ""}).line("writer"))
			// The operation is listed once, with its summary.
			listed := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(e.name) + ` +` + regexp.QuoteMeta(e.summary) + `$`)
			if n := len(listed.FindAllString(overview, -1)); n != 1 {
				t.Errorf("operation %s listed %d times, want once:\n%s", e.name, n, overview)
			}
		})
	}

	overview = help(Projector, "--help")
	for _, s := range projectorCommands {
		t.Run("projector "+s.name, func(t *testing.T) {
			if n := strings.Count(overview, s.line("projector")+"\n") + strings.Count(overview, s.line("projector")+"   "); n != 1 {
				t.Errorf("%q stands %d times in --help, want once:\n%s", s.line("projector"), n, overview)
			}
			if s.name == "" {
				return
			}
			if own := help(Projector, s.name, "--help"); !strings.HasPrefix(own, "Usage: "+s.line("projector")+"\n") {
				t.Errorf("projector %s --help does not open with its usage line:\n%s", s.name, own)
			}
		})
	}
}
