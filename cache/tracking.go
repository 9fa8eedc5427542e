package cache

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// Server-assisted invalidation (WithTracking). Redis itself tells the local
// tier of every change to a key under the prefix, whoever makes it: the
// client's shared pub/sub connection on every master is armed with CLIENT
// TRACKING in broadcasting mode for the prefix and redirects to itself
// (internal/pubsub, track.go). What arrives on __redis__:invalidate drops the
// keys as another instance's message does; a flush clears the tier.
//
// Tracking gates the tier like the invalidation subscription: the tier is
// trusted only until the older of the two sources' last proofs plus H (a
// reply to a health PING on every master, or the session's start), so a
// master whose connection died silently, a master not armed yet (after a
// failover, or a slot moved to a new master) or a failed arming stops the
// tier serving within H; every time tracking comes back up on every master
// the tier is cleared first, so nothing that may have missed a change
// survives a gap.

// WithTracking has Redis invalidate the local tier too (it needs one): every
// change to a key under the prefix on any master, made by anyone (another
// service, redis-cli, a script), an expiry, an eviction or a flush, drops it
// from this instance's local tier within the bound of the package comment,
// not only writes made through a Cache. It needs a *redis.Client, a failover
// client or a *redis.ClusterClient (New refuses a Ring), Redis 6.0 or later,
// and a Redis user allowed CLIENT TRACKING and CLIENT ID (refused, the tier
// serves nothing from memory and the refusal is reported to the logger and
// the error handler). A cache without it opens no connection and sends no
// command for it.
func WithTracking() Option { return func(c *config) { c.local.tracking = true } }

// tracking is a Cache's tracking state (nil without WithTracking).
type tracking struct {
	sub *pubsub.Tracker
	// The trust (unix nanos) each source vouches for; trustUntil is the
	// smaller. The Hub serializes the handlers that write them.
	inval, track atomic.Int64

	received, flushes, downs atomic.Uint64
}

// setTrust records how long the invalidation subscription (fromTracking
// false) or the tracking (true) vouches for the local tier, and lets it be
// served until the earlier of the two.
func (c *Cache[V]) setTrust(fromTracking bool, until int64) {
	t := c.track
	if t == nil {
		c.trustUntil.Store(until)
		return
	}
	if fromTracking {
		t.track.Store(until)
	} else {
		t.inval.Store(until)
	}
	c.trustUntil.Store(min(t.inval.Load(), t.track.Load()))
}

// startTracking arms tracking of the prefix on the client's shared
// connections, before the invalidation channel is subscribed (so that the
// connection carrying it is dialled armed once, not twice).
func (c *Cache[V]) startTracking() error {
	c.track = &tracking{}
	opt := pubsub.Options{HealthInterval: c.cfg.local.healthInterval, HealthTimeout: c.cfg.local.healthTimeout}
	sub, err := c.hub.Track(c.closing, c.cfg.prefix, &trackHandler[V]{c: c}, opt)
	if err != nil {
		return fmt.Errorf("%w: WithTracking: %w", ErrInvalidOption, err)
	}
	c.track.sub = sub
	return nil
}

func (t *tracking) close() {
	if t != nil {
		t.sub.Close()
	}
}

func (t *tracking) fill(s *Stats) {
	if t != nil {
		s.TrackingInvalidations = t.received.Load()
		s.TrackingFlushes = t.flushes.Load()
		s.TrackingDowns = t.downs.Load()
	}
}

// trackHandler applies the tracking's events to the local tier.
type trackHandler[V any] struct{ c *Cache[V] }

func (h *trackHandler[V]) trust() time.Duration {
	return h.c.cfg.local.healthInterval + h.c.cfg.local.healthTimeout
}

func (h *trackHandler[V]) Invalidate(keys []string) {
	c := h.c
	if keys == nil { // a flush: every key may have changed
		c.track.flushes.Add(1)
		c.flushLocal()
		c.trackHook(nil)
		return
	}
	var mine []string
	gen := c.gen.Load()
	for _, k := range keys {
		// A key of another generation is none the tier holds: the tier
		// keeps entries of the current one only (clear.go).
		if g, uk, ok := wire.ParseEntryKey(c.cfg.prefix, k); ok && g == gen {
			mine = append(mine, uk)
		}
	}
	if len(mine) == 0 {
		return // another tracking cache's prefix
	}
	c.track.received.Add(uint64(len(mine)))
	c.dropLocal(mine)
	c.forget(mine)
	c.trackHook(mine)
}

func (h *trackHandler[V]) Up(since time.Time) {
	// Changes after since arrive from here on; what the tier holds may
	// have missed one before.
	h.c.flushLocal()
	h.c.setTrust(true, since.Add(h.trust()).UnixNano())
	if hk := h.c.hooks; hk != nil && hk.onTracking != nil {
		hk.onTracking(true)
	}
}

func (h *trackHandler[V]) Healthy(sent time.Time) {
	h.c.setTrust(true, sent.Add(h.trust()).UnixNano())
}

func (h *trackHandler[V]) Down(err error) {
	c := h.c
	c.setTrust(true, 0)
	c.track.downs.Add(1)
	c.report(logSubscription, "", fmt.Errorf("cacheguard: cache: tracking down, local tier off until it is back: %w", err))
	if hk := c.hooks; hk != nil && hk.onTracking != nil {
		hk.onTracking(false)
	}
}

func (h *trackHandler[V]) Report(err error) { h.c.report(logSubscription, "", err) }

func (c *Cache[V]) trackHook(keys []string) {
	if c.hooks != nil && c.hooks.onTrack != nil {
		c.hooks.onTrack(keys)
	}
}
