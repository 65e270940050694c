// Command flakyreport reads the `go test -json` output of repeated test runs
// (the files scripts/flaky.sh writes, one per package) and prints, for each
// test that failed at least once, how often it ran, how often it failed, and
// the first line of its first failure. A package that failed outside any test
// (a build error, a timeout panic, a race reported after the tests) is listed
// under the test name "(package)". It exits 1 when anything failed.
//
// Usage: go run ./scripts/flakyreport [-all] FILE.json...
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// key names one test of one package; test is "" for the package itself.
type key struct{ pkg, test string }

// tally is what the runs of one test came to.
type tally struct {
	runs, fails, skips int
	firstErr           string
}

// census folds the events of every file.
type census struct {
	tests      map[key]*tally
	output     map[key][]string // output of the run in progress
	testFailed map[string]bool  // a test of the package failed in this run
}

func main() {
	all := flag.Bool("all", false, "list every test, not only those that failed")
	flag.Parse()
	c := &census{tests: map[key]*tally{}, output: map[key][]string{}, testFailed: map[string]bool{}}
	for _, name := range flag.Args() {
		if err := c.readFile(name); err != nil {
			fmt.Fprintln(os.Stderr, "flakyreport:", err)
			os.Exit(2)
		}
	}
	if c.print(os.Stdout, *all) {
		os.Exit(1)
	}
}

func (c *census) readFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return c.read(f, name)
}

func (c *census) read(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// go test writes build errors as plain text beside the JSON.
			c.output[key{pkg: name}] = append(c.output[key{pkg: name}], sc.Text())
			continue
		}
		c.event(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	// Plain text with no package result (a build that failed before any
	// test ran) is a failure of the file's package.
	if out := c.output[key{pkg: name}]; len(out) > 0 {
		c.finish(key{pkg: name}, "fail")
	}
	return nil
}

func (c *census) event(e event) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output":
		c.output[k] = append(c.output[k], strings.TrimRight(e.Output, "\n"))
		if k.test != "" {
			// The package keeps every line too: a timeout panic
			// ends the package, not the test that hung.
			pk := key{pkg: e.Package}
			c.output[pk] = append(c.output[pk], strings.TrimRight(e.Output, "\n"))
		}
	case "pass", "fail", "skip":
		if k.test == "" {
			// A package fails whenever one of its tests fails: that
			// failure is counted under the test, not again here.
			action := e.Action
			if c.testFailed[e.Package] {
				action = "pass"
			}
			c.testFailed[e.Package] = false
			c.finish(k, action)
			return
		}
		if e.Action == "fail" {
			c.testFailed[e.Package] = true
		}
		c.finish(k, e.Action)
	}
}

func (c *census) finish(k key, action string) {
	t := c.tests[k]
	if t == nil {
		t = &tally{}
		c.tests[k] = t
	}
	out := c.output[k]
	delete(c.output, k)
	if action == "skip" {
		t.skips++
		return
	}
	t.runs++
	if action == "fail" {
		t.fails++
		if t.firstErr == "" {
			t.firstErr = firstError(out)
		}
	}
}

// assertion is a line a failing test prints: file.go:line: message.
var assertion = regexp.MustCompile(`^[\w.-]+\.go:\d+: `)

// firstError is the first line of a failed run's output that says what went
// wrong: a test's own failure message (file.go:line:), a panic or a data race,
// else the first line that is not the framework's own (=== / --- lines) nor
// a log line.
func firstError(out []string) string {
	var other string
	for _, l := range out {
		s := strings.TrimSpace(l)
		switch {
		case assertion.MatchString(s), strings.HasPrefix(s, "panic: "), s == "WARNING: DATA RACE":
			return clip(s)
		case other != "", s == "", strings.Trim(s, "=") == "", strings.HasPrefix(s, "=== "), strings.HasPrefix(s, "--- "),
			s == "FAIL", s == "PASS", strings.HasPrefix(s, "FAIL\t"), strings.HasPrefix(s, "ok "),
			strings.HasPrefix(s, "exit status"), strings.HasPrefix(s, "time="):
			continue
		}
		other = s
	}
	if other == "" {
		return "(no output)"
	}
	return clip(other)
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// print writes the table and reports whether anything failed.
func (c *census) print(w io.Writer, all bool) bool {
	keys := make([]key, 0, len(c.tests))
	var runs, fails, failed int
	for k, t := range c.tests {
		if k.test != "" {
			runs += t.runs
		}
		fails += t.fails
		if t.fails > 0 {
			failed++
		}
		if t.fails > 0 || (all && k.test != "") {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].pkg != keys[j].pkg {
			return keys[i].pkg < keys[j].pkg
		}
		return keys[i].test < keys[j].test
	})
	// A parent test fails because a subtest did and says nothing itself:
	// quote its first failed subtest.
	for _, k := range keys {
		t := c.tests[k]
		if t.firstErr != "(no output)" {
			continue
		}
		for _, sub := range keys {
			if sub.pkg == k.pkg && strings.HasPrefix(sub.test, k.test+"/") && c.tests[sub].firstErr != "(no output)" {
				t.firstErr = sub.test + ": " + c.tests[sub].firstErr
				break
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PACKAGE\tTEST\tRUNS\tFAILURES\tRATE\tFIRST ERROR")
	for _, k := range keys {
		t := c.tests[k]
		test := k.test
		if test == "" {
			test = "(package)"
		}
		rate := 0.0
		if t.runs > 0 {
			rate = 100 * float64(t.fails) / float64(t.runs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f%%\t%s\n", strings.TrimPrefix(k.pkg, "github.com/tablejournal/tablejournal/"), test, t.runs, t.fails, rate, t.firstErr)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d test runs, %d failures, %d tests failed at least once\n", runs, fails, failed)
	return fails > 0
}
