package hotkey

import "time"

// Idle pause. A detector with no traffic would still tick ten times a second
// to slide an empty window. Once a tick leaves it holding nothing (no access
// within the whole window, no candidate, no hot key, nothing left in the
// sketch to decay), the ticking goroutine stops its ticker and waits for the
// next Record, which costs Record one load of a flag that is only written
// when the detector pauses or wakes.
//
// A paused detector is empty, so the ticks it skips would only have slid an
// empty window: on waking, the first Tick (or the goroutine, at once) takes
// the clock's current tick as the last one instead of sliding past the
// accesses recorded since the pause. Those count in the tick in progress, as
// they would have if the ticker had kept running.
//
// No wake-up is lost: the goroutine raises the flag before it looks at the
// shards (under their locks), and Record looks at the flag after counting
// under its shard's lock. Either the goroutine sees the access and keeps
// ticking, or Record sees the flag and wakes it.

// pause reports whether the detector holds nothing, and if so marks it idle:
// the caller then waits on d.wake. It runs right after a Tick. The first look
// spares the flag (and Record's slow path) while traffic flows; the second,
// with the flag raised, is the one that cannot miss an access.
func (d *Detector) pause() bool {
	if !d.quiet() {
		return false // the usual answer under traffic, without raising the flag
	}
	d.idle.Store(true)
	d.step("pausing")
	d.tickMu.Lock()
	defer d.tickMu.Unlock()
	if !d.quiet() {
		if !d.idle.CompareAndSwap(true, false) {
			// A Record saw the flag and is sending its wake-up; take it,
			// so that the next pause does not end at once.
			<-d.wake
		}
		return false
	}
	d.rebase = true
	return true
}

// quiet reports whether the detector holds nothing that a tick would change.
func (d *Detector) quiet() bool {
	if len(d.hot.Load().top) > 0 || d.earlySetN.Load() != 0 {
		return false
	}
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		q := s.n == 0 && s.totalSum == 0 && !s.sk.live && s.early.Load() == nil
		s.mu.Unlock()
		if !q {
			return false
		}
	}
	return true
}

// wakeUp ends a pause; Record calls it when it finds the idle flag raised.
// It never blocks: one wake-up is enough, and the channel holds one.
func (d *Detector) wakeUp() {
	if d.idle.CompareAndSwap(true, false) {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// resume brings a woken detector to its clock without sliding the window,
// and returns the time until the next tick boundary, so that the restarted
// ticker keeps the phase it had.
func (d *Detector) resume() time.Duration {
	d.tickMu.Lock()
	defer d.tickMu.Unlock()
	now := d.cfg.now()
	d.rebaseTo(now)
	return d.cfg.tick - now.Sub(d.start)%d.cfg.tick
}

// rebaseTo makes now's tick the last one if the detector paused since the
// last Tick: everything it holds was recorded since, in the tick in progress.
// The caller holds tickMu.
func (d *Detector) rebaseTo(now time.Time) {
	if !d.rebase {
		return
	}
	d.rebase = false
	if cur := int64(now.Sub(d.start) / d.cfg.tick); cur > d.lastTick {
		d.lastTick = cur
	}
}
