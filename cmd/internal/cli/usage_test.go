package cli

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	bi := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tablejournal/tablejournal", Version: version}, Settings: settings}
	}
	tests := []struct {
		stamped string
		bi      *debug.BuildInfo
		ok      bool
		want    string
	}{
		{"", bi("v1.2.3"), true, "replay github.com/tablejournal/tablejournal v1.2.3 (no vcs revision) go1.26.8"},
		{"", bi("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "0123abcd"}, debug.BuildSetting{Key: "vcs.time", Value: "2026-11-21T10:00:00Z"},
			debug.BuildSetting{Key: "vcs.modified", Value: "true"}), true,
			"replay github.com/tablejournal/tablejournal (devel) (rev 0123abcd, 2026-11-21T10:00:00Z, modified) go1.26.8"},
		{"", bi(""), true, "replay github.com/tablejournal/tablejournal (devel) (no vcs revision) go1.26.8"},
		{"", nil, false, "replay (no build information)"},
		// A stamp (-ldflags -X VersionVar=...) wins over the module's version.
		{"v9.9.9", bi("(devel)"), true, "replay github.com/tablejournal/tablejournal v9.9.9 (no vcs revision) go1.26.8"},
		{"v9.9.9", bi("v1.2.3", debug.BuildSetting{Key: "vcs.revision", Value: "0123abcd"}), true,
			"replay github.com/tablejournal/tablejournal v9.9.9 (rev 0123abcd) go1.26.8"},
		{"v9.9.9", nil, false, "replay v9.9.9 (no build information)"},
	}
	for _, tt := range tests {
		if got := buildVersion("replay", tt.stamped, tt.bi, tt.ok); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

// TestVersionStampedByLinker builds a command as `make image` does,
// without VCS information (-buildvcs=false, as in a source tree without
// git), stamping the version with -ldflags -X VersionVar=...: --version
// prints it, not "(devel)".
func TestVersionStampedByLinker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a command")
	}
	bin := filepath.Join(t.TempDir(), "writer")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-X "+VersionVar+"=v9.9.9", "-o", bin,
		"github.com/tablejournal/tablejournal/cmd/writer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("writer --version: %v", err)
	}
	if want := "writer github.com/tablejournal/tablejournal v9.9.9 (no vcs revision) go"; !strings.HasPrefix(string(out), want) {
		t.Errorf("writer --version printed %q, want it to start %q", out, want)
	}
}
