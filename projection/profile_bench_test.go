package projection_test

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
)

// profileEnv names a folder: when set, the projector benchmarks write a
// CPU profile and an allocation profile of each timed projection there
// (`make profile`). Only the projection is profiled, not the publishing
// before it nor the baselines after it.
const profileEnv = "TABLEJOURNAL_BENCH_PROFILE"

// startProfile starts profiling the timed phase of benchmark b when
// profileEnv is set, and returns the function that stops it and writes
// <folder>/<name>.cpu.pprof and <name>.allocs.pprof, the allocations made
// in between (the difference of two snapshots: <name>.allocs-base.pprof
// is the snapshot before, for `go tool pprof -base`). A later round of the
// same benchmark overwrites the files.
func startProfile(b *testing.B) (stop func()) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	name := filepath.Join(dir, strings.NewReplacer("/", "_", "=", "-").Replace(strings.TrimPrefix(b.Name(), "Benchmark")))
	write := func(path string, p *pprof.Profile) {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := p.WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC() // the allocation profile is as of the last GC
	write(name+".allocs-base.pprof", pprof.Lookup("allocs"))
	cpu, err := os.Create(name + ".cpu.pprof")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		cpu.Close()
		runtime.GC()
		write(name+".allocs.pprof", pprof.Lookup("allocs"))
	}
}
