package benchmarks

import (
	"fmt"
	"testing"
)

// CPU per Get: what a Redis hit costs the process that makes it, the
// figure a service owner pays per pod. The rows of the concurrency curves
// (curve_test.go: curveRows rows already in Redis, uniform reads, no local
// tier) are read at 1, 64 and 256 goroutines, the libraries taking turns in
// rounds of curveCell each (interleave_test.go). cpu-us/get is the process's
// CPU time (user + system, getrusage) over the reads of a round, divided by
// those reads; the other libraries sit idle meanwhile, and whatever their
// background goroutines spend is charged to the library running. reads/s
// is the same round's throughput (the report sets it against the server's
// own ceiling, which run.sh measures with redis-benchmark).

var cpuGoroutines = []int{1, 64, 256}

// BenchmarkCPUPerGet measures CPU per Redis-hit Get and reads/s at
// cpuGoroutines, for the contestants of BenchmarkCurve.
func BenchmarkCPUPerGet(b *testing.B) {
	libs := curveContestants(b, nil)
	names := make([]string, len(libs))
	for i, l := range libs {
		names[i] = l.name
	}
	for _, g := range cpuGoroutines {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			interleaved(b, names, func(l int) roundMetrics {
				res := runCell(libs[l].c.get, g, curveCell(), curveKeys("uniform"))
				if res.errs > 0 || res.reads == 0 {
					b.Fatalf("%s: %d of %d reads failed: %v", names[l], res.errs, res.reads, res.err)
				}
				return roundMetrics{
					"cpu-us/get": res.cpu.Seconds() * 1e6 / float64(res.reads),
					"reads/s":    res.perSec,
				}
			})
		})
	}
}
