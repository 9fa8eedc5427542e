package benchmarks

import (
	"context"
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/hotkey"
)

// TestIdleCPU measures what idle caches cost: 20 caches with a local tier
// (each with its invalidation subscriber) and a hot-key detector of its own,
// each read a few times and then left alone. It reports the process's CPU
// time (user + system, from getrusage) over the idle stretch, which
// CACHEGUARD_IDLE_SECONDS sets (10 s by default), less the same process's
// CPU time over as long a stretch before any cache exists (the test binary
// links the other libraries, and go-zero samples the CPU load from a
// goroutine of its own). Nothing is asserted on the figure, which depends on
// the machine:
//
//	go test -run TestIdleCPU -v .
//
// CACHEGUARD_IDLE_CPUPROFILE=file writes a CPU profile of the idle stretch
// alone (the profiler's own cost is then in the figure).
func TestIdleCPU(t *testing.T) {
	measurement(t)
	idle := 10 * time.Second
	if s := os.Getenv("CACHEGUARD_IDLE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("CACHEGUARD_IDLE_SECONDS=%q", s)
		}
		idle = time.Duration(n) * time.Second
	}
	const caches = 20
	ctx := context.Background()
	base := idleCPU(t, idle)
	t.Logf("process without caches: %v CPU in %v", base.Round(time.Microsecond), idle)
	rdb := newClient(t)
	load := func(ctx context.Context, key string) (row, error) { return makeRow(1), nil }
	for i := range caches {
		det, err := hotkey.New(hotkey.WithK(hotK), hotkey.WithMinCount(hotMinCount))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { det.Close() })
		c, err := cache.New(rdb, cache.Values[row]{},
			cache.WithPrefix("idle:"+strconv.Itoa(i)+":"),
			cache.WithLocal(1<<20),
			cache.WithHotKeys(det),
			cache.WithLogger(quietLog))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		waitLocalTier(t, c)
		for range 20 { // some traffic, so that every clock has started
			if _, err := c.Get(ctx, "k", load); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Let whatever winds down after traffic (the coarse clock pauses after
	// a second without local reads) wind down before measuring.
	time.Sleep(2 * time.Second)
	stopProfile := idleProfile(t)
	used := idleCPU(t, idle) - base
	stopProfile()
	t.Logf("%d idle caches (local tier, invalidation subscriber, hot-key detector each): %v CPU in %v over the process without caches, %.2f ms CPU per second, %.3f %% of one core",
		caches, used.Round(time.Microsecond), idle,
		float64(used.Microseconds())/1000/idle.Seconds(), 100*used.Seconds()/idle.Seconds())
}

// idleCPU is the CPU time the process uses while the test sleeps for d.
func idleCPU(t *testing.T, d time.Duration) time.Duration {
	before := cpuTime(t)
	time.Sleep(d)
	return cpuTime(t) - before
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleProfile starts a CPU profile into CACHEGUARD_IDLE_CPUPROFILE, if set,
// and returns the function that stops it.
func idleProfile(t *testing.T) func() {
	path := os.Getenv("CACHEGUARD_IDLE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}
