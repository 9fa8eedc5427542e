package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// The faults of BenchmarkFaultStorm, each on servers of its own (never the
// shared server, whose rows the other benchmarks keep between passes).

// faultEnv is one fault and the servers it happens to.
type faultEnv struct {
	// point aims a library's configuration at the fault's servers.
	point func(cfg *implConfig)
	// inject causes the fault and returns once it is over on the servers'
	// side: the server answers again, the flush is done, the Sentinels
	// agree on the promoted master.
	inject func()
	// can says whether the library can follow this fault at all.
	can func(lib library) bool
}

// faultNames are the faults, in table order.
var faultNames = []string{"restart", "flushall", "failover"}

// startFault starts the servers of the named fault for b.
func startFault(b *testing.B, name string) faultEnv {
	switch name {
	case "restart":
		// A crash and a restart without persistence: the server comes
		// back empty on the same address.
		srv := redistest.Start(b)
		return faultEnv{
			point:  func(cfg *implConfig) { cfg.addr = srv.Addr },
			inject: func() { srv.Kill(); srv.Restart() },
			can:    func(library) bool { return true },
		}
	case "flushall":
		srv := redistest.Start(b)
		admin := srv.Client()
		return faultEnv{
			point: func(cfg *implConfig) { cfg.addr = srv.Addr },
			inject: func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := admin.FlushAll(ctx).Err(); err != nil {
					b.Errorf("FLUSHALL: %v", err)
				}
			},
			can: func(library) bool { return true },
		}
	case "failover":
		// A planned failover (SENTINEL FAILOVER) of a master with one
		// replica and three Sentinels; clients follow the Sentinels.
		s, _ := redistest.StartSentinel(b)
		return faultEnv{
			point:  func(cfg *implConfig) { cfg.sentinel = s.Options() },
			inject: func() { s.Failover() },
			can:    func(lib library) bool { return lib.sentinel },
		}
	}
	b.Fatalf("no fault %q", name)
	return faultEnv{}
}

// hungError is the error of a call that outlived its deadline by
// faultHangGrace: the library did not honour its context.
type hungError struct{}

func (hungError) Error() string { return "call did not return after its deadline" }

// errHung is the one hungError.
var errHung error = hungError{}

// boundedCall runs call with a context ending after d and waits for it at
// most d + faultHangGrace: a library that ignores its context shows as
// errHung (its goroutine is left behind), not as a hung benchmark.
func boundedCall[T any](d time.Duration, call func(ctx context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	done := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		done <- result{v, err}
	}()
	t := time.NewTimer(d + faultHangGrace)
	defer t.Stop()
	select {
	case r := <-done:
		cancel()
		return r.v, r.err
	case <-t.C:
		cancel()
		var zero T
		return zero, errHung
	}
}

// closeBounded closes the library, waiting at most faultHangGrace × 5 for
// it: a hung library is left behind.
func closeBounded(c *cacheImpl) {
	done := make(chan struct{})
	go func() {
		c.close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * faultHangGrace):
	}
}
