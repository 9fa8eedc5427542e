package local

import (
	"sync/atomic"
	"time"
	_ "unsafe" // cheaprand
)

// coarseTick is the resolution of the clock the tier's freshness checks
// read. Reading the wall clock on every local hit would cost more than the
// rest of the hit; one tick is negligible against a local TTL of a second.
const coarseTick = time.Millisecond

// clockIdleTicks is how many ticks without a local read pause the clock.
const clockIdleTicks = 1000

// coarseClock is the wall clock to within a tick, read with one atomic
// load. start sets it; run keeps it going.
type coarseClock struct {
	now  atomic.Int64  // unix nanos, advanced every coarseTick
	idle atomic.Bool   // paused until the next read
	used atomic.Bool   // a read happened since the last tick
	wake chan struct{} // wakes a paused clock
}

func (c *coarseClock) start() {
	c.wake = make(chan struct{}, 1)
	c.now.Store(time.Now().UnixNano())
}

// run keeps now within a tick of the wall clock until closing is closed,
// while the clock is read. After clockIdleTicks without a read it pauses (an
// idle cache costs no CPU) until touch wakes it.
func (c *coarseClock) run(closing <-chan struct{}) {
	tk := time.NewTicker(coarseTick)
	defer tk.Stop()
	idle := 0
	for {
		select {
		case <-closing:
			return
		case <-tk.C:
			// The time now, not the tick's: a ticker sends the time a tick
			// was due, which after the process was frozen (SIGSTOP, a VM
			// migration, a long pause) is the time it stopped, and every
			// entry would look fresh for as long as the freeze lasted.
			c.now.Store(time.Now().UnixNano())
			if c.used.Swap(false) {
				idle = 0
				continue
			}
			if idle++; idle < clockIdleTicks {
				continue
			}
			tk.Stop()
			c.idle.Store(true)
			select {
			case <-closing:
				return
			case <-c.wake:
			}
			idle = 0
			tk.Reset(coarseTick)
		}
	}
}

// read marks a read and returns the time to judge freshness by. The first
// read after a pause brings the clock up to date itself (so it never judges
// freshness by the time the clock paused) and wakes the ticker. One read in
// sampleMask+1 also checks the clock against the real one (catchUp): after
// the process was frozen (SIGSTOP, a VM migration, a long pause), a reader
// may run before the ticker does, and with GOMAXPROCS=1 for a whole
// scheduling quantum; the sample ends that after about sampleMask+1 reads
// (microseconds), for about two nanoseconds a read. Reads keep to loads
// while nothing changes, so the hit path writes no shared memory.
func (c *coarseClock) read() int64 {
	if !c.used.Load() {
		c.used.Store(true)
	}
	if c.idle.Load() && c.idle.CompareAndSwap(true, false) {
		c.now.Store(time.Now().UnixNano())
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	if cheaprand()&sampleMask == 0 {
		return c.catchUp()
	}
	return c.now.Load()
}

// sampleMask: one read in sampleMask+1 also reads the real clock.
const sampleMask = 127

// staleAfter is how far the coarse clock may lag the real one before a
// sampled read takes it for stopped (a frozen process not yet running its
// ticker again) and brings it up to date.
const staleAfter = int64(2 * coarseTick)

// cheaprand is the runtime's per-thread random source (a nanosecond and a
// half, no shared memory written; math/rand/v2 costs four times as much on
// the hit path). Linked by name as many widely used modules do, which keeps
// it available.
//
//go:linkname cheaprand runtime.cheaprand
func cheaprand() uint32

// catchUp is read's sample: the real clock, stored if the coarse one lags
// it by more than staleAfter.
//
//go:noinline
func (c *coarseClock) catchUp() int64 {
	now := c.now.Load()
	real := time.Now().UnixNano()
	if real-now <= staleAfter {
		return now
	}
	for now < real && !c.now.CompareAndSwap(now, real) {
		now = c.now.Load()
	}
	return max(now, real)
}
