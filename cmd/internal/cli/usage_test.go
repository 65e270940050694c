package cli

import (
	"runtime/debug"
	"testing"
)

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
