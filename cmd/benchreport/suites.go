package main

import (
	"os"
	"strconv"
	"strings"
)

// A suite is one `go test -bench` invocation.
type suite struct {
	Name  string
	Pkg   string // "./events"
	Bench string // the -bench pattern
	// Benchtime is the -benchtime flag: a duration, or "Nx" for exactly N
	// iterations where a benchmark's b.N is a workload size or a round.
	Benchtime string
	// Count overrides the -count of the run when not zero.
	Count int
	// Env is added to the environment of go test.
	Env []string
	// Optional suites run only when -suites names them: a quicker
	// measurement of what other suites measure too.
	Optional bool
}

// commandsEnv sizes BenchmarkProjectorMemory, which skips when it is unset.
const commandsEnv = "TABLEJOURNAL_BENCH_COMMANDS"

// consoleRowsEnv sizes BenchmarkConsole: rows and commands.
const consoleRowsEnv = "TABLEJOURNAL_BENCH_CONSOLE_ROWS"

// consoleRows is BenchmarkConsole's size: the environment's, else 20,000.
var consoleRows = func() int {
	if n, err := strconv.Atoi(os.Getenv(consoleRowsEnv)); err == nil && n > 0 {
		return n
	}
	return 20000
}()

// suites lists every benchmark run, sized so that the whole report takes
// about ten minutes on two cores with -count 3 and 1M commands.
func suites(commands int) []suite {
	return []suite{
		{Name: "codec", Pkg: "./events", Bench: ".", Benchtime: "100ms"},
		// b.N messages per mode; with fsync the server syncs every write.
		{Name: "publish async", Pkg: "./journal", Bench: "^BenchmarkPublishAsync$", Benchtime: "10000x"},
		{Name: "publish sync", Pkg: "./journal", Bench: "^BenchmarkPublishSync$", Benchtime: "5000x"},
		{Name: "store sqlite", Pkg: "./store/sqlite", Bench: ".", Benchtime: "1s"},
		{Name: "store azurite", Pkg: "./store/azure", Bench: ".", Benchtime: "1s"},
		// One round each: publish, then time the projection of the workload.
		{Name: "projector throughput", Pkg: "./projection", Bench: "^BenchmarkProject(Spread|Hot)$", Benchtime: "1x"},
		// Four pairs of rounds (without and with metrics, each a quarter of
		// the throughput workload) per run, the order alternating.
		{Name: "projector metrics", Pkg: "./cmd/internal/metrics", Bench: "^BenchmarkProjectMetrics$", Benchtime: "1x"},
		// One round per layout (plain, versioned; the order alternating):
		// throughput and Publish-to-outcome latency, plain over versioned.
		{Name: "layouts", Pkg: "./projection", Bench: "^BenchmarkLayouts$", Benchtime: "1x"},
		// One round each with and without the outcomes look-up of fetched
		// command IDs (a command ID applies at most once).
		{Name: "outcome lookup cost", Pkg: "./projection", Bench: "^BenchmarkOutcomeLookup$", Benchtime: "1x"},
		// One round each against the simulated Azure account, 3 s of its
		// limit per workload (TABLEJOURNAL_BENCH_SIM_SECONDS): raw, then 1,
		// 2 and 4 projector instances, spread and hot.
		{Name: "projector simulated azure", Pkg: "./projection", Bench: "^BenchmarkSimAzure$", Benchtime: "1x"},
		// b.N commands at 500/s.
		{Name: "publish to outcome", Pkg: "./projection", Bench: "^BenchmarkPublishToOutcome$", Benchtime: "2500x"},
		{Name: "projector memory", Pkg: "./projection", Bench: "^BenchmarkProjectorMemory$", Benchtime: "1x", Count: 1,
			Env: []string{commandsEnv + "=" + strconv.Itoa(commands)}},
		{Name: "replay", Pkg: "./replay", Bench: "^BenchmarkReplay$", Benchtime: "1s"},
		// The projector's CPU per command against the raw writers' CPU per
		// row, alone (issue 18): the embedded store's throughput rounds, and
		// the simulated account's raw writer and one instance (two suites:
		// a -bench pattern has one element per level, and a benchmark
		// deeper than its pattern is not run).
		{Name: "projector cpu embedded", Pkg: "./projection", Benchtime: "1x", Optional: true,
			Bench: `^BenchmarkProject(Spread|Hot)$/^sqlite$`},
		{Name: "projector cpu simulated", Pkg: "./projection", Benchtime: "1x", Optional: true,
			Bench: `^BenchmarkSimAzure$/^(spread|hot)$/^(raw|instances=1)$`},
		// Per table store, against the projector binary: the latency of
		// Apply, read-your-writes and a follower next to an acknowledged
		// publish and a direct store write (300 requests of each kind per
		// round), and a restarted follower's wait for its first change.
		{Name: "latency", Pkg: "./tests/latency", Bench: ".", Benchtime: "1x"},
		{Name: "asof", Pkg: "./replay", Bench: "^BenchmarkAsOfRow$", Benchtime: "300ms"},
		// 100 requests per page of the console against a table of
		// TABLEJOURNAL_BENCH_CONSOLE_ROWS rows, one command each (default
		// 20,000; the target is 1,000,000), seeded once per run.
		{Name: "console", Pkg: "./console", Bench: "^BenchmarkConsole$", Benchtime: "100x", Count: 1,
			Env: []string{consoleRowsEnv + "=" + strconv.Itoa(consoleRows)}},
	}
}

// args returns the arguments of go test for s.
func (s suite) args(count int, timeout string) []string {
	if s.Count != 0 {
		count = s.Count
	}
	return []string{"test", "-run", "^$", "-bench", s.Bench, "-benchtime", s.Benchtime,
		"-count", strconv.Itoa(count), "-timeout", timeout, s.Pkg}
}

// commandLine is the go test command of s as one would type it.
func (s suite) commandLine(count int, timeout string) string {
	line := ""
	for _, e := range s.Env {
		line += e + " "
	}
	line += "go"
	for _, a := range s.args(count, timeout) {
		line += " " + shellQuote(a)
	}
	return line
}

// shellQuote quotes a for a POSIX shell when it needs it.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
