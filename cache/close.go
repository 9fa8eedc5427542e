package cache

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// Close stops background work (shared fills, detached loads, early refreshes,
// the invalidation subscriber) and GetMany calls in flight, releases the fill
// leases this Cache holds, and waits for its goroutines (Redis calls left
// running at a caller's deadline included), for at most the
// close timeout (WithCloseTimeout, default 5 s). If a loader ignores its
// cancellation past that, Close releases its lease anyway and returns an
// error wrapping context.DeadlineExceeded. It does not close the Redis
// client, which the caller owns. Calls after Close return ErrClosed; Close
// may race any call.
//
// A process that stops while it holds fill leases (a rolling deploy) must
// not leave them in Redis: every other process would wait them out. So Close
// cancels what runs here, lets the cancelled fills release their own
// leases, waits for them, then releases any lease still held by a loader
// that ignored its cancellation: that loader's fill, when it returns, finds
// its placeholder gone and is refused like any stale fill.
func (c *Cache[V]) Close() error {
	if !c.life.Close() {
		return nil
	}
	c.gens.Close() // out of the client's shared sync
	deadline := time.Now().Add(c.cfg.closeTimeout)
	var err error
	if !c.life.Wait(c.cfg.closeTimeout) {
		err = kind.Errorf("cacheguard: cache: close: loads still running after %v: %w", c.cfg.closeTimeout, context.DeadlineExceeded)
	}
	c.eng.ReleaseHeld()
	// Calls left running at their deadline end by the client's own
	// timeouts; none of their goroutines outlives Close. A batch of queued
	// commands that a plain command ending from now on would start runs on
	// that command's caller's goroutine (internal/transport).
	c.redis.Stop()
	if !c.redis.Wait(time.Until(deadline)) && err == nil {
		err = kind.Errorf("cacheguard: cache: close: Redis calls still running after %v: %w", c.cfg.closeTimeout, context.DeadlineExceeded)
	}
	c.tier.StopTracking()
	c.bus.Close()
	c.leases.Close()
	if herr := c.hub.Release(deadline); herr != nil && err == nil {
		err = kind.Errorf("cacheguard: cache: close: %w", herr)
	}
	if c.tier != nil {
		c.tier.Close()
	}
	c.rec.Flush() // the counts of repeated errors not logged yet
	return err
}
