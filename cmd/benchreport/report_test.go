package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/tablejournal/tablejournal/projection
cpu: Intel(R) Xeon(R) Processor
BenchmarkProjectSpread/sqlite-2         	       1	3924033959 ns/op	      5097 cmds/s	         0.07019 ratio-vs-batched	     72618 batched-entities/s
BenchmarkProjectSpread/sqlite-2         	time=2026-11-21T03:21:55Z level=WARN msg="a log line in the middle"
some more output
       1	3000000000 ns/op	      6000 cmds/s	         0.08 ratio-vs-batched	     75000 batched-entities/s
BenchmarkProjectSpread/sqlite-2         	       1	3500000000 ns/op	      5500 cmds/s	         0.075 ratio-vs-batched	     73000 batched-entities/s
BenchmarkAsOfRow/sqlite/depth=10000/tip-2     	  161340	      6800 ns/op
BenchmarkSimAzure/spread/raw-2         	       1	4166666666 ns/op	         0.1 busy/req	      4800 entities/s	         0.96 limit-used
BenchmarkSimAzure/spread/instances=1-2 	       1	5000000000 ns/op	      4000 cmds/s	      4000 entities/s	         0.8 ratio-vs-limit
BenchmarkSimAzure/spread/instances=2-2 	       1	5128205128 ns/op	      3900 cmds/s	      3900 entities/s	         0.78 ratio-vs-limit
PASS
ok  	github.com/tablejournal/tablejournal/projection	31.519s
pkg: github.com/tablejournal/tablejournal/replay
BenchmarkReplay/sqlite/rebuild-2 	       4	 259058461 ns/op	     19301 cmds/s	     11051 projector-cmds/s	         1.747 ratio-vs-projector
--- FAIL: BenchmarkReplay/azurite
FAIL
`

func TestParse(t *testing.T) {
	rs, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 8 {
		t.Fatalf("%d results, want 8: %+v", len(rs), rs)
	}
	if r := rs[1]; r.Name != "BenchmarkProjectSpread/sqlite" || r.Iters != 1 || r.Metrics["cmds/s"] != 6000 {
		t.Errorf("the result broken by log lines: %+v", r)
	}
	if r := rs[3]; r.Name != "BenchmarkAsOfRow/sqlite/depth=10000/tip" || r.Metrics["ns/op"] != 6800 {
		t.Errorf("sub-benchmark name with '=': %+v", r)
	}
	if r := rs[7]; r.Pkg != "github.com/tablejournal/tablejournal/replay" || r.Metrics["ratio-vs-projector"] != 1.747 {
		t.Errorf("result after a pkg line: %+v", r)
	}
}

func TestReport(t *testing.T) {
	rs, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	all := collect(rs, "github.com/tablejournal/tablejournal")
	if len(all) != 6 {
		t.Fatalf("%d series, want 6", len(all))
	}
	if med, n := all[0].median("cmds/s"); med != 5500 || n != 3 {
		t.Errorf("median %v of %d runs, want 5500 of 3", med, n)
	}
	var b strings.Builder
	report(&b, all)
	out := strings.Join(strings.Fields(b.String()), " ") // columns: one space
	for _, want := range []string{
		"projection ProjectSpread/sqlite ratio-vs-batched 0.075 >= 0.70 3 0.070..0.080 BELOW",
		"replay Replay/sqlite/rebuild ratio-vs-projector 1.747 >= 0.80 1 1.747..1.747 ok",
		// A ratio whose baseline is another benchmark, and targets by package.
		"projection SimAzure/spread/instances=1 ratio-vs-raw 0.833 - 1 0.833..0.833",
		"projection SimAzure/spread/instances=2 ratio-vs-limit 0.780 >= 0.80 1 0.780..0.780 BELOW",
		"projection SimAzure/spread/instances=2 ratio-vs-1-instance 0.975 >= 0.95 1 0.975..0.975 ok",
		"SimAzure/spread/raw 4800 entities/s 0.96 limit-used 0.1 busy/req (1 run)",
		"ProjectSpread/sqlite 5500 cmds/s 73k batched-entities/s (3 runs)",
		"Replay/sqlite/rebuild 19.3k cmds/s 11.1k projector-cmds/s (1 run)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "instances=1 ratio-vs-1-instance") {
		t.Errorf("one instance compared with itself:\n%s", out)
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{
		0.07019: "0.0702", 6.667: "6.67", 85.11: "85.1", 349.7: "350", 7558: "7558",
		108446: "108k", 12345: "12.3k", 999999: "1000k", 2.5e6: "2.5M",
	} {
		if got := format(v); got != want {
			t.Errorf("format(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestLatencyCeilings: the latency ratios of issue 31 are ceilings, and
// the latency figures come in the order of their kinds.
func TestLatencyCeilings(t *testing.T) {
	s := &series{pkg: "tests/latency", name: "BenchmarkLatency/sqlite/sequential",
		units: []string{"apply-p50-ms", "lat-x-apply-p50", "lat-x-parts-p50", "lat-x-parts-p99", "publish-p50-ms", "store-p50-ms"},
		values: map[string][]float64{"apply-p50-ms": {3}, "lat-x-apply-p50": {1.1}, "lat-x-parts-p50": {2.5},
			"lat-x-parts-p99": {1.9}, "publish-p50-ms": {0.5}, "store-p50-ms": {0.7}}}
	var b strings.Builder
	report(&b, []*series{s})
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"tests/latency Latency/sqlite/sequential lat-x-apply-p50 1.100 <= 1.20 1 1.100..1.100 ok",
		"tests/latency Latency/sqlite/sequential lat-x-parts-p50 2.500 <= 1.50 1 2.500..2.500 ABOVE",
		"tests/latency Latency/sqlite/sequential lat-x-parts-p99 1.900 <= 2.00 1 1.900..1.900 ok",
		"Latency/sqlite/sequential 0.5 publish-p50-ms 0.7 store-p50-ms 3 apply-p50-ms (1 run)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// Against the simulated account the p50 ceiling is 1.25, not 1.5.
	sim := &series{pkg: "tests/latency", name: "BenchmarkLatency/simazure/sequential",
		units: []string{"lat-x-parts-p50", "lat-x-parts-p99"}, values: map[string][]float64{"lat-x-parts-p50": {1.3}, "lat-x-parts-p99": {1.9}}}
	b.Reset()
	report(&b, []*series{sim})
	out = strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"tests/latency Latency/simazure/sequential lat-x-parts-p50 1.300 <= 1.25 1 1.300..1.300 ABOVE",
		"tests/latency Latency/simazure/sequential lat-x-parts-p99 1.900 <= 2.00 1 1.900..1.900 ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
