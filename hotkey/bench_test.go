package hotkey

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// zipfTrace returns n key indexes drawn from a zipfian law (s = 1.1) over
// nKeys keys, so that benchmarks pay for neither the draw nor the key.
func zipfTrace(n, nKeys int) []int32 {
	z := rand.NewZipf(rand.New(rand.NewPCG(7, 7)), 1.1, 1, uint64(nKeys-1))
	trace := make([]int32, n)
	for i := range trace {
		trace[i] = int32(z.Uint64())
	}
	return trace
}

// newBench returns a detector with default settings and its real ticking
// goroutine, as a cache would use it.
func newBench(b *testing.B, opts ...Option) *Detector {
	d, err := New(opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

func BenchmarkRecord(b *testing.B) {
	keys := keyNames(100_000)
	trace := zipfTrace(1<<20, len(keys))
	b.Run("one-key", func(b *testing.B) {
		d := newBench(b)
		b.ReportAllocs()
		for b.Loop() {
			d.Record("user:42")
		}
	})
	b.Run("zipf-100k-loop-only", func(b *testing.B) {
		// The cost of fetching a key of the trace, to subtract from the
		// zipf rows: 100k keys do not fit in the caches.
		var sink byte
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			k := keys[trace[i&(len(trace)-1)]]
			sink += k[len(k)-1]
		}
		_ = sink
	})
	b.Run("zipf-100k", func(b *testing.B) {
		d := newBench(b)
		for _, i := range trace { // warm: candidates admitted, storage reused
			d.Record(keys[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			d.Record(keys[trace[i&(len(trace)-1)]])
		}
	})
	b.Run("zipf-100k-sampled-1/8", func(b *testing.B) {
		d := newBench(b, WithSampling(8))
		for _, i := range trace {
			d.Record(keys[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			d.Record(keys[trace[i&(len(trace)-1)]])
		}
	})
}

func BenchmarkRecordParallel(b *testing.B) {
	keys := keyNames(100_000)
	trace := zipfTrace(1<<20, len(keys))
	b.Run("zipf-100k", func(b *testing.B) {
		d := newBench(b)
		for _, i := range trace {
			d.Record(keys[i])
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(len(trace))
			for pb.Next() {
				d.Record(keys[trace[i&(len(trace)-1)]])
				i++
			}
		})
	})
	b.Run("one-key", func(b *testing.B) {
		d := newBench(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d.Record("user:42")
			}
		})
	})
}

func BenchmarkIsHot(b *testing.B) {
	d, _ := newManual(b, WithMinCount(1))
	for range 1000 {
		d.Record("user:42")
	}
	d.Tick()
	for _, bc := range []struct {
		name, key string
		want      bool
	}{{"hot", "user:42", true}, {"cold", "user:43", false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d.IsHot(bc.key) != bc.want {
					b.Fatalf("IsHot(%s) != %v", bc.key, bc.want)
				}
			}
		})
	}
}

// BenchmarkTick measures one tick of a detector (default options, 8 shards)
// whose shards are full of candidates. A tick holds each shard in turn, so a
// Record waits at most about this divided by the shard count.
func BenchmarkTick(b *testing.B) {
	keys := keyNames(100_000)
	trace := zipfTrace(1<<20, len(keys))
	clk := newFakeClock()
	d, err := New(WithClock(clk.Now), withShards(8))
	if err != nil {
		b.Fatal(err)
	}
	for _, i := range trace {
		d.Record(keys[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := range 20_000 { // top the shards up: keys leave as the window slides
			d.Record(keys[trace[(i*20_000+j)&(len(trace)-1)]])
		}
		clk.Advance(defaultTick)
		b.StartTimer()
		d.Tick()
	}
}

// BenchmarkTickMassChange measures the tick that promotes k keys at once and
// the tick that demotes them all, with a change callback: the work of such a
// tick must grow with the number of candidates and changes, not with their
// product.
func BenchmarkTickMassChange(b *testing.B) {
	for _, k := range []int{1024, 8192} {
		keys := keyNames(k)
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			clk := newFakeClock()
			events := 0
			d, err := New(WithClock(clk.Now), withShards(8), WithK(k), WithMinCount(2),
				WithWindow(defaultTick), WithTick(defaultTick),
				WithOnChange(func(Event) { events++ }))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				for _, key := range keys {
					d.Record(key)
					d.Record(key)
				}
				clk.Advance(defaultTick)
				b.StartTimer()
				d.Tick() // every key promoted
				b.StopTimer()
				// Another set of keys, hot enough to be tracked but
				// under the threshold, keeps the candidates' count up.
				for _, key := range keys {
					d.Record("x" + key)
				}
				clk.Advance(defaultTick)
				b.StartTimer()
				d.Tick() // every key demoted
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}
