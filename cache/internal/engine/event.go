package engine

import (
	"context"

	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

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
func (c *Engine[V]) event(ctx context.Context, e readEvent, key string, err error) {
	h := c.Hooks
	switch e {
	case evShared:
		if h != nil && h.OnJoin != nil {
			h.OnJoin(key)
		}
	case evLeaseWait, evLeaseWaitOn:
		if e == evLeaseWait {
			c.Rec.LeaseWaits.Add(1)
		}
		c.Rec.Waits(ctx)
		if h != nil && h.OnLeaseWait != nil {
			h.OnLeaseWait(key)
		}
	case evWaitTimeout:
		c.Rec.WaitTimeouts.Add(1)
	case evLoaded:
		if h != nil && h.AfterLoad != nil {
			h.AfterLoad(key)
		}
	case evFilled, evFillRefused, evFillFailed:
		if e == evFillRefused {
			c.Rec.RejectedFills.Add(1)
		}
		if e == evFillFailed {
			c.Rec.Report(telemetry.FillFailed, key, c.Redis.Error(key, "fill", err))
		}
		if h != nil && h.OnFill != nil {
			h.OnFill(key, e == evFilled)
		}
	case evFillAbandoned:
		if h != nil && h.OnFill != nil {
			h.OnFill(key, false)
		}
	}
}
