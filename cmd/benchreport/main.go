// Benchreport runs tablejournal's benchmark suites and prints one short
// table of medians over several runs: every ratio metric (ratio-vs-raw,
// ratio-vs-tx100, ratio-vs-projector) against its target, then the key
// absolute figures next to the baselines their benchmarks measured in the
// same runs.
//
//	go run ./cmd/benchreport [-count 3] [-commands 1000000] [-suites regexp] [-raw file]
//
// It runs one `go test -run '^$' -bench ...` per suite (suites.go) in the
// module's root, echoes their output to stderr as it comes, keeps all of it
// in a raw file (which benchstat reads too) and prints the table on stdout.
// The Azurite benchmarks find Azurite as the tests do, through
// TABLEJOURNAL_AZURITE; `make bench` installs it and exports that.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("count", 3, "runs of each benchmark; the table shows their medians")
	commands := fs.Int("commands", 1_000_000, "commands of the projector memory benchmark (default $"+commandsEnv+" if set)")
	only := fs.String("suites", "", "run only the suites whose name matches this regexp (e.g. 'projector|replay')")
	rawPath := fs.String("raw", "", "file for the raw go test output (default: a new file in the temporary folder)")
	timeout := fs.String("timeout", "30m", "-timeout of each go test")
	if v, err := strconv.Atoi(os.Getenv(commandsEnv)); err == nil {
		*commands = v
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *count < 1 {
		fmt.Fprintln(stderr, "usage: go run ./cmd/benchreport [-count N] [-commands N] [-suites regexp] [-raw file]")
		return 2
	}
	if _, err := time.ParseDuration(*timeout); err != nil {
		fmt.Fprintf(stderr, "-timeout: %v\n", err)
		return 2
	}
	filter, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintf(stderr, "-suites: %v\n", err)
		return 2
	}
	var selected []suite
	for _, s := range suites(*commands) {
		if filter.MatchString(s.Name) && (!s.Optional || *only != "") {
			selected = append(selected, s)
		}
	}
	if len(selected) == 0 {
		fmt.Fprintf(stderr, "-suites %q matches none of the suites\n", *only)
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	raw, err := rawFile(*rawPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer raw.Close()

	started, startLoad := time.Now(), loadAverage()
	out, lines, failed := runSuites(selected, *count, *timeout, root, raw, stderr)

	results, err := Parse(out)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	module := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		module = bi.Main.Path
	}
	fmt.Fprintf(stdout, "tablejournal benchmarks, %s, %s, %d CPUs, -count %d, memory benchmark %d commands; took %s; load average %s at the start, %s at the end\n\n",
		started.Format("2006-01-02 15:04"), runtime.Version(), runtime.NumCPU(), *count, *commands,
		time.Since(started).Round(time.Second), startLoad, loadAverage())
	report(stdout, collect(results, module))
	fmt.Fprintf(stdout, "\nraw output: %s\ncommands (in %s):\n", raw.Name(), root)
	for _, l := range lines {
		fmt.Fprintf(stdout, "  %s\n", l)
	}
	if len(failed) > 0 {
		fmt.Fprintf(stdout, "\nFAILED: %s (their output is in the raw file)\n", strings.Join(failed, "; "))
		return 1
	}
	return 0
}

// runSuites runs the suites, one go test each, in turn, in the module's
// folder root. It returns their output, their command lines and those that
// failed; raw and stderr get the output as it comes.
func runSuites(selected []suite, count int, timeout, root string, raw io.Writer, stderr io.Writer) (out *bytes.Buffer, lines, failed []string) {
	out = &bytes.Buffer{}
	for i, s := range selected {
		line := s.commandLine(count, timeout)
		lines = append(lines, line)
		fmt.Fprintf(stderr, "== [%d/%d] %s: %s\n", i+1, len(selected), s.Name, line)
		cmd := exec.Command("go", s.args(count, timeout)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), s.Env...)
		w := io.MultiWriter(out, raw, stderr)
		cmd.Stdout, cmd.Stderr = w, w
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", s.Name, err))
		}
		fmt.Fprintf(stderr, "== %s took %s\n", s.Name, time.Since(t0).Round(time.Second))
	}
	return out, lines, failed
}

// moduleRoot returns the folder of the main module's go.mod.
func moduleRoot() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	p := strings.TrimSpace(string(gomod))
	if p == "" || p == os.DevNull {
		return "", errors.New("not inside a Go module: run benchreport from the repository")
	}
	return filepath.Dir(p), nil
}

// rawFile creates the file that keeps the raw output.
func rawFile(path string) (*os.File, error) {
	if path == "" {
		return os.CreateTemp("", "tablejournal-bench-"+time.Now().Format("20060102-150405")+"-*.txt")
	}
	return os.Create(path)
}

// loadAverage returns the machine's 1, 5 and 15 minute load averages, or
// "unknown" where /proc/loadavg does not tell: the benchmarks share the
// machine, and ratios measured under load say so.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
