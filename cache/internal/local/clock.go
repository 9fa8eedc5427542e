package local

import "time"

// coarseTick is the resolution of the clock the tier's freshness checks
// read. Reading the wall clock on every local hit would cost more than the
// rest of the hit; one tick is negligible against a local TTL of a second.
const coarseTick = time.Millisecond

// clockIdleTicks is how many ticks without a local read pause the clock.
const clockIdleTicks = 1000

// runCoarseClock keeps coarseNow within a tick of the wall clock until Close,
// while the tier is read. After clockIdleTicks without a read it pauses (an
// idle cache costs no CPU) until touchClock wakes it.
func (t *Tier[V]) runCoarseClock() {
	tk := time.NewTicker(coarseTick)
	defer tk.Stop()
	closing := t.life.Closing().Done()
	idle := 0
	for {
		select {
		case <-closing:
			return
		case now := <-tk.C:
			t.coarseNow.Store(now.UnixNano())
			if t.clockUsed.Swap(false) {
				idle = 0
				continue
			}
			if idle++; idle < clockIdleTicks {
				continue
			}
			tk.Stop()
			t.clockIdle.Store(true)
			select {
			case <-closing:
				return
			case <-t.clockWake:
			}
			idle = 0
			tk.Reset(coarseTick)
		}
	}
}

// touchClock marks a local read; the first read after a pause brings the
// clock up to date itself (so it never judges freshness by the time the
// clock paused) and wakes the ticker. Reads keep to loads while nothing
// changes, so the hit path writes no shared memory.
func (t *Tier[V]) touchClock() {
	if !t.clockUsed.Load() {
		t.clockUsed.Store(true)
	}
	if t.clockIdle.Load() && t.clockIdle.CompareAndSwap(true, false) {
		t.coarseNow.Store(time.Now().UnixNano())
		select {
		case t.clockWake <- struct{}{}:
		default:
		}
	}
}

// ClockIdle reports whether the coarse clock is paused.
func (t *Tier[V]) ClockIdle() bool { return t.clockIdle.Load() }
