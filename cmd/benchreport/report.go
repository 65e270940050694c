package main

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
)

// targets are the minimum each ratio metric should reach, by package.
var targets = map[string]map[string]float64{
	"journal": {
		"ratio-vs-raw": 0.8, // Writer.PublishAsync against raw nats.go PublishMsgAsync
	},
	"projection": {
		"ratio-vs-batched": 0.7, // projector against the same rows in the store's fewest transactions
		// Against the simulated Azure account (BenchmarkSimAzure): the
		// binding limit, and N instances against one, no worse within the
		// run-to-run noise.
		"ratio-vs-limit":      0.8,
		"ratio-vs-1-instance": 0.95,
		// projector with metrics served and scraped every second, against none
		"ratio-vs-no-metrics": 0.97,
		// The projector with the batched look-up of fetched IDs' earlier
		// outcomes against the same projector without it.
		"ratio-vs-no-lookup": 0.8,
		// The plain layout's projector throughput against versioned's in
		// the same run (BenchmarkLayouts): a second write per batch.
		"ratio-vs-versioned": 0.5,
	},
	"replay": {
		"ratio-vs-projector": 0.8, // replay rebuild against the live projector
		"ratio-vs-tip":       0.5, // asof a quarter into a row's history against its tip: within 2x
		"ratio-vs-previous":  0.5, // the same against one version back: the same two requests, no scan
	},
	"console": {
		"ratio-vs-300ms": 1, // 300 ms over a page's p99 (100 commands or rows): under 300 ms
	},
}

// ceilings are the maximum each cost ratio should reach: a "cpu-x-" metric
// (CPU per command over the baseline's CPU per row) or a "lat-x-" one (a
// latency over its baseline's); lower is better.
var ceilings = map[string]map[string]float64{
	"projection": {
		"cpu-x-batched": 2, // embedded store: projector CPU per command against raw 100-entity transactions per row
		"cpu-x-raw":     2, // simulated account: against the raw writer's CPU per row
		// embedded store: against the JetStream floor (journalFloor) plus the
		// raw transactions' CPU per row (issue 39)
		"cpu-x-floor-plus-batched": 1.25,
		// The plain layout's Publish-to-outcome latency against versioned's.
		"lat-x-versioned-p50": 2.5,
		"lat-x-versioned-p99": 3,
	},
	// Latency against its parts in the same round (issue 31).
	"tests/latency": {
		"lat-x-parts-p50": 1.5, // Apply's p50 over (acknowledged publish + direct store write)'s p50s
		"lat-x-parts-p99": 2,   // the same at p99
		"lat-x-apply-p50": 1.2, // read-your-writes' p50 over Apply's
	},
}

// benchCeilings are ceilings of one benchmark's ratio, before those of its
// package (ceilings): a target that depends on the baseline's size.
var benchCeilings = []struct {
	Pkg   string
	Bench *regexp.Regexp
	Unit  string
	Max   float64
}{
	// Against the simulated account's 5 ms round trip the parts are
	// mostly that round trip, and Apply should add little to it (issue 39).
	{"tests/latency", regexp.MustCompile(`^BenchmarkLatency/simazure/`), "lat-x-parts-p50", 1.25},
}

// ceiling returns the ceiling of unit in benchmark s, if it has one.
func ceiling(s *series, unit string) (float64, bool) {
	for _, c := range benchCeilings {
		if c.Pkg == s.pkg && c.Unit == unit && c.Bench.MatchString(s.name) {
			return c.Max, true
		}
	}
	t, ok := ceilings[s.pkg][unit]
	return t, ok
}

// A derived ratio divides the median of one benchmark's metric by the
// median of another's from the same runs, for baselines that are
// benchmarks of their own: the benchmarks of package Pkg matching Bench,
// their metric Unit over the metric BaseUnit of the benchmark whose name is
// Bench.ReplaceAllString(name, Base). It is reported as Name.
type derived struct {
	Pkg            string
	Bench          *regexp.Regexp
	Unit           string
	Base, BaseUnit string
	Name           string
}

var derivedRatios = []derived{
	{"projection", regexp.MustCompile(`^(BenchmarkSimAzure/\w+)/instances=\d+$`), "cmds/s", "$1/raw", "entities/s", "ratio-vs-raw"},
	{"projection", regexp.MustCompile(`^(BenchmarkSimAzure/\w+)/instances=(?:[02-9]|\d\d+)$`), "cmds/s", "$1/instances=1", "cmds/s", "ratio-vs-1-instance"},
	// CPU per command against the raw writer's CPU per row, in the same runs.
	{"projection", regexp.MustCompile(`^(BenchmarkSimAzure/\w+)/instances=\d+$`), "cpu-µs/row", "$1/raw", "cpu-µs/row", "cpu-x-raw"},
}

// A figure selects the benchmarks and metrics shown as key figures: the
// benchmarks of package Pkg (its path below the module) whose name matches
// Bench, with the metrics listed in Units; a unit ending in "*" selects
// every unit with that prefix. Units are shown in this order, so each
// figure comes next to the baseline its benchmark measured in the same run.
type figure struct {
	Pkg   string
	Bench *regexp.Regexp
	Units []string
}

var figures = []figure{
	{"events", regexp.MustCompile(`^Benchmark(Marshal|Unmarshal)(Msgpack|JSON)/multi-op$`), []string{"ns/op", "MB/s"}},
	{"journal", regexp.MustCompile(`^BenchmarkPublishAsync/`), []string{"writer-msgs/s", "raw-msgs/s", "writer-cpu-ns/msg", "raw-cpu-ns/msg"}},
	{"journal", regexp.MustCompile(`^BenchmarkPublishSync/`), []string{"p50-µs", "p99-µs"}},
	{"store/sqlite", regexp.MustCompile(`^BenchmarkStore/`), []string{"entities/s"}},
	{"store/azure", regexp.MustCompile(`^BenchmarkAzurite/`), []string{"entities/s"}},
	{"projection", regexp.MustCompile(`^BenchmarkProject(Spread|Hot)/`), []string{"cmds/s", "batched-entities/s", "cmds/tx", "reads/cmd", "cpu-µs/cmd", "batched-cpu-µs/row", "floor-cpu-µs/cmd"}},
	{"projection", regexp.MustCompile(`^BenchmarkSimAzure/`), []string{"cmds/s", "entities/s", "limit-used", "busy/req", "charged/row", "cmds/tx", "reads/cmd", "cpu-µs/row", "cpu-cores"}},
	{"projection", regexp.MustCompile(`^BenchmarkProjectMetrics/`), []string{"cmds/s", "metrics-cmds/s", "cpu-ns/cmd", "metrics-cpu-ns/cmd"}},
	{"projection", regexp.MustCompile(`^BenchmarkOutcomeLookup/`), []string{"cmds/s", "no-lookup-cmds/s"}},
	{"projection", regexp.MustCompile(`^BenchmarkLayouts/`), []string{"versioned-cmds/s", "plain-cmds/s", "versioned-p50-ms", "plain-p50-ms", "versioned-p99-ms", "plain-p99-ms"}},
	{"projection", regexp.MustCompile(`^BenchmarkPublishToOutcome$`), []string{"p50-ms", "p99-ms", "max-ms", "ack-p50-ms", "ack-p99-ms"}},
	{"projection", regexp.MustCompile(`^BenchmarkProjectorMemory$`), []string{"heap-MB-*", "rss-MB-*", "heap-growth", "cmds/s"}},
	{"replay", regexp.MustCompile(`^BenchmarkReplay/[^/]+/rebuild$`), []string{"cmds/s", "projector-cmds/s"}},
	{"replay", regexp.MustCompile(`^BenchmarkReplay/[^/]+/(snapshot|load)$`), []string{"entities/s", "bytes/entity"}},
	{"replay", regexp.MustCompile(`^BenchmarkReplay/[^/]+/verify$`), []string{"rows/s", "rebuild-rows/s"}},
	{"replay", regexp.MustCompile(`^BenchmarkAsOfRow/`), []string{"tip-ns", "previous-ns", "deep-ns"}},
	{"console", regexp.MustCompile(`^BenchmarkConsole/`), []string{"p50-ms", "p99-ms"}},
	{"tests/latency", regexp.MustCompile(`^BenchmarkLatency/`), []string{"publish-p*", "store-p*", "apply-p*", "wait-p*", "ryw-p*", "follow-p*"}},
	{"tests/latency", regexp.MustCompile(`^BenchmarkFollowRestart$`), []string{"first-change-ms"}},
}

// series is every run of one benchmark: the values of each metric.
type series struct {
	pkg, name string
	units     []string // in order of first appearance
	values    map[string][]float64
}

// median returns the median of unit's values and how many there are.
func (s *series) median(unit string) (float64, int) {
	v := slices.Clone(s.values[unit])
	if len(v) == 0 {
		return math.NaN(), 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], len(v)
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, len(v)
}

// collect groups results by package and benchmark, in order of appearance.
// Packages are named by their path below the module.
func collect(results []Result, module string) []*series {
	var out []*series
	byKey := make(map[string]*series)
	for _, r := range results {
		pkg := strings.TrimPrefix(strings.TrimPrefix(r.Pkg, module), "/")
		key := pkg + " " + r.Name
		s := byKey[key]
		if s == nil {
			s = &series{pkg: pkg, name: r.Name, values: make(map[string][]float64)}
			byKey[key] = s
			out = append(out, s)
		}
		for _, u := range sortedUnits(r.Metrics) {
			if _, seen := s.values[u]; !seen {
				s.units = append(s.units, u)
			}
			s.values[u] = append(s.values[u], r.Metrics[u])
		}
	}
	return out
}

func sortedUnits(m map[string]float64) []string {
	us := make([]string, 0, len(m))
	for u := range m {
		us = append(us, u)
	}
	slices.Sort(us)
	return us
}

// report writes the table: every ratio with its target, then the key
// figures.
func report(w io.Writer, all []*series) {
	fmt.Fprintln(w, "RATIOS (median of runs; min..max)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "package\tbenchmark\tratio\tmedian\ttarget\truns\trange\t")
	row := func(s *series, u string, med float64, n int, lo, hi float64) {
		target, verdict := "-", ""
		if t, ok := targets[s.pkg][u]; ok {
			target = fmt.Sprintf(">= %.2f", t)
			verdict = "ok"
			if med < t {
				verdict = "BELOW"
			}
		} else if t, ok := ceiling(s, u); ok {
			target = fmt.Sprintf("<= %.2f", t)
			verdict = "ok"
			if med > t {
				verdict = "ABOVE"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\t%d\t%.3f..%.3f\t%s\n",
			s.pkg, short(s.name), u, med, target, n, lo, hi, verdict)
	}
	for _, s := range all {
		for _, u := range s.units {
			if strings.HasPrefix(u, "ratio-vs-") || strings.HasPrefix(u, "cpu-x-") || strings.HasPrefix(u, "lat-x-") {
				med, n := s.median(u)
				row(s, u, med, n, slices.Min(s.values[u]), slices.Max(s.values[u]))
			}
		}
		for _, d := range derivedRatios {
			if s.pkg != d.Pkg || !d.Bench.MatchString(s.name) {
				continue
			}
			base := find(all, s.pkg, d.Bench.ReplaceAllString(s.name, d.Base))
			if base == nil || len(s.values[d.Unit]) == 0 || len(base.values[d.BaseUnit]) == 0 {
				continue
			}
			// The runs are not paired: the range is the widest the
			// extremes allow.
			num, den := s.values[d.Unit], base.values[d.BaseUnit]
			mn, n := s.median(d.Unit)
			md, nb := base.median(d.BaseUnit)
			row(s, d.Name, mn/md, min(n, nb), slices.Min(num)/slices.Max(den), slices.Max(num)/slices.Min(den))
		}
	}
	tw.Flush()

	fmt.Fprintln(w)
	fmt.Fprintln(w, "KEY FIGURES (medians; each row's baselines come from the same runs)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range figures {
		for _, s := range all {
			if s.pkg != f.Pkg || !f.Bench.MatchString(s.name) {
				continue
			}
			cells := []string{s.pkg, short(s.name)}
			runs := 0
			for _, u := range expandUnits(f.Units, s.units) {
				med, n := s.median(u)
				runs = max(runs, n)
				cells = append(cells, format(med)+" "+u)
			}
			plural := "s"
			if runs == 1 {
				plural = ""
			}
			fmt.Fprintf(tw, "%s\t(%d run%s)\n", strings.Join(cells, "\t"), runs, plural)
		}
	}
	tw.Flush()
}

// find returns the series of benchmark name in package pkg, or nil.
func find(all []*series, pkg, name string) *series {
	for _, s := range all {
		if s.pkg == pkg && s.name == name {
			return s
		}
	}
	return nil
}

// expandUnits lists the units of want present in have, a "prefix*" entry
// standing for every unit of have with that prefix.
func expandUnits(want, have []string) []string {
	var out []string
	for _, w := range want {
		if p, ok := strings.CutSuffix(w, "*"); ok {
			for _, h := range have {
				if strings.HasPrefix(h, p) {
					out = append(out, h)
				}
			}
		} else if slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// short drops the "Benchmark" prefix of a benchmark name.
func short(name string) string { return strings.TrimPrefix(name, "Benchmark") }

// format writes v with three significant digits and a k or M suffix for
// large values: 0.0712, 7.56k, 1.23M.
func format(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "-"
	case a >= 1e6:
		return trim(fmt.Sprintf("%.3g", v/1e6)) + "M"
	case a >= 1e4:
		return trim(fmt.Sprintf("%.3g", v/1e3)) + "k"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return trim(fmt.Sprintf("%.3g", v))
}

// trim turns %g's exponent form of a large value back into plain digits.
func trim(s string) string {
	if strings.Contains(s, "e+") {
		var f float64
		fmt.Sscan(s, &f)
		return fmt.Sprintf("%.0f", f)
	}
	return s
}
