package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Result is one benchmark result line of `go test -bench`.
type Result struct {
	// Pkg is the import path from the preceding "pkg:" line.
	Pkg string
	// Name is the benchmark's full name without its -GOMAXPROCS suffix:
	// "BenchmarkProjectSpread/sqlite".
	Name string
	// Iters is the number of iterations (b.N).
	Iters int
	// Metrics are the values by unit: "ns/op", "cmds/s", "ratio-vs-tx100".
	Metrics map[string]float64
}

var (
	// nameLine is a result line, or the start of one whose numbers were
	// pushed onto a later line by output the benchmark printed meanwhile.
	nameLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?(?:\s+(.*))?$`)
	// numbersLine is the rest of a result line: iterations, value-unit pairs.
	numbersLine = regexp.MustCompile(`^\s*(\d+)\s+(\S+ \S+.*)$`)
)

// Parse reads the output of `go test -bench` and returns its results in
// order. Lines that are not results (logs, PASS, ok) are skipped. A result
// line broken by other output in between ("BenchmarkX-2 \t" then, after the
// log lines, "1  123 ns/op ...") is put back together.
func Parse(r io.Reader) ([]Result, error) {
	var (
		results []Result
		pkg     string
		pending string // a name whose numbers have not come yet
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg, pending = strings.TrimSpace(p), ""
			continue
		}
		if m := nameLine.FindStringSubmatch(line); m != nil {
			if res, ok := parseNumbers(pkg, m[1], m[2]); ok {
				results = append(results, res)
				pending = ""
			} else {
				pending = m[1]
			}
			continue
		}
		if pending != "" {
			if res, ok := parseNumbers(pkg, pending, line); ok {
				results = append(results, res)
				pending = ""
			}
		}
	}
	return results, sc.Err()
}

// parseNumbers parses "<iterations> <value> <unit> <value> <unit> ...".
func parseNumbers(pkg, name, s string) (Result, bool) {
	m := numbersLine.FindStringSubmatch(s)
	if m == nil {
		return Result{}, false
	}
	iters, err := strconv.Atoi(m[1])
	if err != nil {
		return Result{}, false
	}
	f := strings.Fields(m[2])
	if len(f)%2 != 0 {
		return Result{}, false
	}
	res := Result{Pkg: pkg, Name: name, Iters: iters, Metrics: make(map[string]float64, len(f)/2)}
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false
		}
		res.Metrics[f[i+1]] = v
	}
	return res, true
}
