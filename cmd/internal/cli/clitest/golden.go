package clitest

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
)

// update rewrites the golden files under testdata instead of comparing:
// go test ./cmd/... -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// A golden script, after Pebble's data-driven tests: a file of blocks,
// each a command line after "$ ", a line "----", and what the command
// printed, normalised: its stdout, then its stderr after a line
// "--- stderr" and its exit status after "--- exit" when they are not
// empty and 0. Lines before the first block are comments; a blank line
// ends them and each block. With -update the outputs are written back.
type goldenBlock struct {
	cmd  string
	want string
}

func readGolden(t *testing.T, path string) (head string, blocks []goldenBlock) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split("\n"+string(data), "\n$ ")
	head = strings.Trim(parts[0], "\n")
	for i, p := range parts[1:] {
		cmd, out, ok := strings.Cut(p, "\n----")
		if !ok {
			t.Fatalf("%s: block %q has no ---- line", path, cmd)
		}
		// A blank line ends each block; the separator took it but for the
		// last.
		out = strings.TrimPrefix(out, "\n")
		if i == len(parts)-2 {
			out = strings.TrimSuffix(out, "\n")
		}
		blocks = append(blocks, goldenBlock{cmd: cmd, want: out})
	}
	return head, blocks
}

// RunGolden runs every block of the script at path with run, which
// returns the command's stdout, stderr and exit status, and compares the
// normalised output with the block's.
func RunGolden(t *testing.T, path string, norm *Normalizer, run func(args []string) (string, string, int)) {
	t.Helper()
	head, blocks := readGolden(t, path)
	var out strings.Builder
	if head != "" {
		out.WriteString(head + "\n\n")
	}
	for _, b := range blocks {
		stdout, stderr, code := run(norm.args(b.cmd))
		got := norm.apply(stdout)
		if stderr != "" {
			got += "--- stderr\n" + norm.apply(stderr)
		}
		if code != cli.ExitOK {
			got += fmt.Sprintf("--- exit %d\n", code)
		}
		if *update {
			fmt.Fprintf(&out, "$ %s\n----\n%s\n", b.cmd, got)
			continue
		}
		if got != b.want {
			t.Errorf("%s: $ %s\n--- got\n%s--- want\n%s", path, b.cmd, got, b.want)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Normalizer makes outputs stable: times (as 0000-00-00T00:00:00.0000000Z), durations, rates, temporary
// folders and ports stand as placeholders.
type Normalizer struct {
	Tmp       string // $TMP in commands and outputs
	KeepPorts bool
}

var (
	timeRE  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	digitRE = regexp.MustCompile(`\d`)
	portRE  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

var normalizations = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\bin (\d+(\.\d+)?(h|m|s|ms|µs|ns))+\b`), "in <duration>"},
	{regexp.MustCompile(`\d+ (commands|rows)/s\b`), "<n> $1/s"},
	{regexp.MustCompile(`"(seconds|rebuildSeconds|commandsPerSecond|entitiesPerSecond)":[-+.e\d]+`), `"$1":<n>`},
}

func (n *Normalizer) apply(s string) string {
	if n.Tmp != "" {
		s = strings.ReplaceAll(s, n.Tmp, "$TMP")
	}
	// A time keeps its width, so that tables stay aligned.
	s = timeRE.ReplaceAllStringFunc(s, func(t string) string { return digitRE.ReplaceAllString(t, "0") })
	for _, r := range normalizations {
		s = r.re.ReplaceAllString(s, r.with)
	}
	if !n.KeepPorts {
		s = portRE.ReplaceAllString(s, "127.0.0.1:<port>")
	}
	return s
}

// args splits a command line into arguments: words, or 'quoted' ones;
// $TMP stands for the temporary folder.
func (n *Normalizer) args(line string) []string {
	var args []string
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		if line == "" {
			break
		}
		var arg string
		if rest, ok := strings.CutPrefix(line, "'"); ok {
			arg, line, _ = strings.Cut(rest, "'")
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			arg, line = line[:i], line[i:]
		} else {
			arg, line = line, ""
		}
		args = append(args, strings.ReplaceAll(arg, "$TMP", n.Tmp))
	}
	return args
}
