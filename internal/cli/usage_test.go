package cli

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

// TestHelpUsageVersion: on every command --help goes to stdout and exits
// 0, a command-line mistake prints one line to stderr and exits 2, and
// --version prints the version to stdout.
func TestHelpUsageVersion(t *testing.T) {
	t.Setenv(EnvNATS, unreachableNATS)
	type cmd struct {
		name string
		run  Command
		pre  []string // the arguments before the flags: the subcommand
	}
	cmds := []cmd{
		{"projector", Projector, nil},
		{"writer", Writer, []string{"upsert"}},
		{"writer", Writer, []string{"apply"}},
		{"replay", Replay, nil},
	}
	for _, rc := range replayCommands {
		name := rc.name
		cmds = append(cmds, cmd{"replay", Replay, []string{name}})
	}
	run := func(c cmd, args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := Exit(c.run(context.Background(), append(append([]string(nil), c.pre...), args...), IO{Stdout: &stdout, Stderr: &stderr}), &stderr)
		return stdout.String(), stderr.String(), code
	}
	for _, c := range cmds {
		t.Run(strings.Join(append([]string{c.name}, c.pre...), " "), func(t *testing.T) {
			for _, h := range []string{"--help", "-h"} {
				out, errs, code := run(c, h)
				if code != ExitOK || !strings.Contains(out, "Usage") || errs != "" {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want the usage on stdout alone", h, code, head(out), errs)
				}
				if len(c.pre) > 0 || c.name == "projector" {
					if !strings.Contains(out, "--nats") && !strings.Contains(out, "-nats") {
						t.Errorf("%s: no flags listed: %s", h, head(out))
					}
				}
			}
			for _, bad := range [][]string{{"--no-such-flag"}, {"--timeout", "soon"}, {"--json=maybe"}} {
				if c.name == "projector" && bad[0] != "--no-such-flag" {
					continue // no --timeout, no --json
				}
				if c.name == "replay" && len(c.pre) == 0 && bad[0] == "--timeout" {
					continue
				}
				out, errs, code := run(c, bad...)
				if code != ExitUsage || out != "" || strings.Count(errs, "\n") != 1 {
					t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr", bad, code, out, errs, ExitUsage)
				}
				flag := strings.SplitN(strings.TrimPrefix(bad[0], "--"), "=", 2)[0]
				if !strings.Contains(errs, "--"+flag) {
					t.Errorf("%v: the error does not name --%s as typed: %q", bad, flag, errs)
				}
			}
			out, errs, code := run(c, "--version")
			if code != ExitOK || !strings.HasPrefix(out, c.name+" github.com/tablejournal/tablejournal ") || errs != "" {
				t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, errs)
			}
		})
	}
}

func head(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func TestBuildVersion(t *testing.T) {
	bi := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tablejournal/tablejournal", Version: version}, Settings: settings}
	}
	tests := []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{bi("v1.2.3"), true, "replay github.com/tablejournal/tablejournal v1.2.3 (no vcs revision) go1.26.8"},
		{bi("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "0123abcd"}, debug.BuildSetting{Key: "vcs.time", Value: "2026-11-21T10:00:00Z"},
			debug.BuildSetting{Key: "vcs.modified", Value: "true"}), true,
			"replay github.com/tablejournal/tablejournal (devel) (rev 0123abcd, 2026-11-21T10:00:00Z, modified) go1.26.8"},
		{bi(""), true, "replay github.com/tablejournal/tablejournal (devel) (no vcs revision) go1.26.8"},
		{nil, false, "replay (no build information)"},
	}
	for _, tt := range tests {
		if got := buildVersion("replay", tt.bi, tt.ok); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
