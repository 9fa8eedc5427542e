package benchmarks

import (
	"fmt"
	"testing"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/maypok86/otter/v2"
)

// BenchmarkLocalHitRatio replays the zipfian trace (s = 1.1 over 100 000
// rows) against ristretto v2 and otter v2 holding at most entries rows,
// storing a row on every miss, and reports the share of hits. An op is one
// replay of the whole trace (1 048 576 reads) from one goroutine. The oracle
// row is the best any cache of that size can do on this trace in the long
// run: it holds exactly the entries most frequent rows.
func BenchmarkLocalHitRatio(b *testing.B) {
	trace := zipfTrace()[:scaled(traceLen, 1<<16)]
	for _, entries := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("entries=%d/store=ristretto", entries), func(b *testing.B) {
			var hits, total int
			for b.Loop() {
				rc, err := ristretto.NewCache(&ristretto.Config[int32, struct{}]{
					NumCounters: int64(entries) * 10, MaxCost: int64(entries), BufferItems: 64, IgnoreInternalCost: true,
				})
				if err != nil {
					b.Fatal(err)
				}
				for _, id := range trace {
					if _, ok := rc.Get(id); ok {
						hits++
					} else {
						rc.Set(id, struct{}{}, 1)
					}
				}
				total += len(trace)
				rc.Close()
			}
			b.ReportMetric(100*float64(hits)/float64(total), "hit-%")
		})
		b.Run(fmt.Sprintf("entries=%d/store=otter", entries), func(b *testing.B) {
			var hits, total int
			for b.Loop() {
				oc := otter.Must(&otter.Options[int32, struct{}]{MaximumSize: entries})
				for _, id := range trace {
					if _, ok := oc.GetIfPresent(id); ok {
						hits++
					} else {
						oc.Set(id, struct{}{})
					}
				}
				total += len(trace)
			}
			b.ReportMetric(100*float64(hits)/float64(total), "hit-%")
		})
		b.Run(fmt.Sprintf("entries=%d/store=oracle", entries), func(b *testing.B) {
			// zipfTrace ranks ids by frequency: id 0 is the most frequent.
			var hits int
			for _, id := range trace {
				if int(id) < entries {
					hits++
				}
			}
			for b.Loop() {
			}
			b.ReportMetric(100*float64(hits)/float64(len(trace)), "hit-%")
		})
	}
}
