package cache

import (
	"testing"
	"time"
)

// BenchmarkBreakerAllow measures what the circuit breaker adds to every Redis
// call while Redis is healthy: asking to go ahead and reporting the outcome.
// The parallel run shows whether callers queue on a shared lock.
func BenchmarkBreakerAllow(b *testing.B) {
	_, rdb := newSingleB(b)
	c, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithCircuitBreaker(5, time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	call := func() {
		done, err := c.redis.Allow("k")
		if err != nil {
			b.Fatal(err)
		}
		done(nil)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
	})
}
