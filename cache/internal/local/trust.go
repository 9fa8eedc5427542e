package local

import "time"

// The tier's trust follows its sources of invalidations: the subscription
// (and, with WithTracking, tracking on every master). Up flushes the tier
// and lets it serve until interval+timeout after the SUBSCRIBE was sent,
// each health reply extends that to interval+timeout after its PING was
// sent, and Down takes it off until the next Up.

// Up flushes the tier and lets it serve again, trusting it until
// trustUntil unless a health reply extends that.
func (t *Tier[V]) Up(trustUntil time.Time) {
	e := t.epoch.Load()
	if e%2 == 0 {
		// Already up: a resubscription we did not see fail. Go through
		// down first so nothing admitted before is trusted.
		e = t.epoch.Add(1)
	}
	t.floor.Store(e + 1) // the epoch it comes up in
	t.store.Clear()
	t.rec.LocalFlushes.Add(1)
	t.SetTrust(false, trustUntil.UnixNano())
	t.epoch.Add(1)
}

// Down takes the tier off until the next Up: nothing is served from it as
// fresh, nothing is admitted.
func (t *Tier[V]) Down() {
	t.SetTrust(false, 0)
	if e := t.epoch.Load(); e%2 == 0 {
		t.epoch.CompareAndSwap(e, e+1)
	}
}

// Flush clears the tier when an invalidation may have been lost while the
// subscription stayed up. It moves the epoch on by two (it stays up) and
// the floor with it before clearing: reads in flight then do not admit what
// they fetched before the flush, and an entry one of them stored anyway,
// around the Clear, is of an epoch below the floor and never served, not
// even stale while Redis fails.
func (t *Tier[V]) Flush() {
	t.invalSeq.Add(1)
	if e := t.epoch.Load(); e%2 == 0 {
		t.epoch.CompareAndSwap(e, e+2) // a failed swap: it went down, which is as good
	}
	// Another flush may run at once: the floor only rises.
	for e := t.epoch.Load(); ; {
		f := t.floor.Load()
		if f >= e || t.floor.CompareAndSwap(f, e) {
			break
		}
	}
	t.store.Clear()
	t.rec.LocalFlushes.Add(1)
}

// SetTrust records how long the invalidation subscription (fromTracking
// false) or the tracking (true) vouches for the tier, and lets it be served
// until the earlier of the two.
func (t *Tier[V]) SetTrust(fromTracking bool, until int64) {
	tr := t.track
	if tr == nil {
		t.trustUntil.Store(until)
		return
	}
	if fromTracking {
		tr.track.Store(until)
	} else {
		tr.inval.Store(until)
	}
	t.trustUntil.Store(min(tr.inval.Load(), tr.track.Load()))
}
