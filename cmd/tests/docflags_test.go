package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestDocsNameRealFlags reads the docs, the README and the client's godoc
// for a flag named after its command ("the projector's --tables",
// "replay verify --table") and fails on one that the command's --help, kept
// in testdata/help.txt, does not list: a reader who types it gets "flag
// provided but not defined".
func TestDocsNameRealFlags(t *testing.T) {
	t.Parallel()
	flags := helpFlags(t, filepath.Join("testdata", "help.txt"))
	var files []string
	for _, pattern := range []string{"../../docs/*.md", "../../README.md", "../../*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d files to read: %v", len(files), files)
	}
	mention := regexp.MustCompile("\\b(projector|writer|replay)(?:'s|(?: [a-z][a-z-]*)?) `?--([a-z][a-z0-9-]*)")
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllStringSubmatch(string(text), -1) {
			if !flags[m[1]][m[2]] {
				t.Errorf("%s: %q: %s has no --%s", f, m[0], m[1], m[2])
			}
		}
	}
}

// helpFlags returns, per command, the flags its --help and its
// subcommands' list, read from the golden help file.
func helpFlags(t *testing.T, path string) map[string]map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	command := regexp.MustCompile(`^\$ (\w+)`)
	flag := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	out := map[string]map[string]bool{}
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := command.FindStringSubmatch(sc.Text()); m != nil {
			cur = m[1]
			if out[cur] == nil {
				out[cur] = map[string]bool{}
			}
		} else if m := flag.FindStringSubmatch(sc.Text()); m != nil && cur != "" {
			out[cur][m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"projector", "writer", "replay"} {
		if len(out[c]) == 0 {
			t.Fatalf("%s: no flags of %s", path, c)
		}
	}
	return out
}
