package cache

import "context"

// readEvent is a step of the read engine. Each is announced once, through
// event, which feeds everything that learns of it: the counters behind
// Stats, the call's Observer, the aggregated log and the test hooks.
type readEvent uint8

const (
	evShared        readEvent = iota // a call shares a read under way here: joined it, or queued behind it
	evLeaseWait                      // a fill saw another holder's lease and waits, for the first time
	evLeaseWaitOn                    // ... and waits again
	evWaitTimeout                    // a wait ran out of budget
	evLoaded                         // the loader returned, before the fill
	evFilled                         // a fill landed
	evFillRefused                    // a fill was refused: a write landed after the lease was taken
	evFillFailed                     // a fill's command failed (err); the value is served uncached
	evFillAbandoned                  // a fill was not sent or not answered (the pipeline failed, err)
)

// event announces e for key (err for the failures) on the call whose
// context is ctx.
func (c *Cache[V]) event(ctx context.Context, e readEvent, key string, err error) {
	h := c.hooks
	switch e {
	case evShared:
		if h != nil && h.onJoin != nil {
			h.onJoin(key)
		}
	case evLeaseWait, evLeaseWaitOn:
		if e == evLeaseWait {
			c.stats.leaseWaits.Add(1)
		}
		c.observedWait(ctx)
		if h != nil && h.onLeaseWait != nil {
			h.onLeaseWait(key)
		}
	case evWaitTimeout:
		c.stats.waitTimeouts.Add(1)
	case evLoaded:
		if h != nil && h.afterLoad != nil {
			h.afterLoad(key)
		}
	case evFilled, evFillRefused, evFillFailed:
		if e == evFillRefused {
			c.stats.rejectedFills.Add(1)
		}
		if e == evFillFailed {
			c.report(logFillFailed, key, c.redisError(key, "fill", err))
		}
		if h != nil && h.onFill != nil {
			h.onFill(key, e == evFilled)
		}
	case evFillAbandoned:
		if h != nil && h.onFill != nil {
			h.onFill(key, false)
		}
	}
}
