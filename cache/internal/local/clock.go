package local

import (
	"sync/atomic"
	"time"
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
		case now := <-tk.C:
			c.now.Store(now.UnixNano())
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

// touch marks a read; the first read after a pause brings the clock up to
// date itself (so it never judges freshness by the time the clock paused)
// and wakes the ticker. Reads keep to loads while nothing changes, so the
// hit path writes no shared memory.
func (c *coarseClock) touch() {
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
}
