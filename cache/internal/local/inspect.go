package local

// What tests look at and change of the tier's entries and clocks.

// Age makes e past its freshness (fresh) and past its stale bound too
// (stale), as if its time had run out.
func (t *Tier[V]) Age(e *Entry[V], fresh, stale bool) {
	if fresh {
		e.fresh = 0
	}
	if stale {
		e.stale = 0
	}
}

// EpochOf is the epoch e was admitted in; Epoch is the tier's now.
func (t *Tier[V]) EpochOf(e *Entry[V]) uint64 { return e.epoch }

// Epoch is the tier's epoch (odd while it is down).
func (t *Tier[V]) Epoch() uint64 { return t.epoch.Load() }

// Now is the tier's coarse clock (unix nanos).
func (t *Tier[V]) Now() int64 { return t.clock.now.Load() }

// SameStripe reports whether a and b take the same admission lock.
func (t *Tier[V]) SameStripe(a, b string) bool { return t.locks.of(a) == t.locks.of(b) }

// ClockIdle reports whether the coarse clock is paused.
func (t *Tier[V]) ClockIdle() bool { return t.clock.idle.Load() }
