package local

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/pubsub"
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

// Keys is what tracking needs of the cache's key naming: the user key of
// one of its Redis keys in the current generation.
type Keys interface {
	Parse(rkey string) (key string, ok bool)
}

// StartTracking arms tracking of prefix on the client's shared connections
// of hub, before the invalidation channel is subscribed (so that the
// connection carrying it is dialled armed once, not twice). What Redis
// reports changed is dropped from the tier and handed to forget.
func (t *Tier[V]) StartTracking(hub *pubsub.Hub, prefix string, keys Keys, forget func([]string)) error {
	t.track = &tracking{}
	opt := pubsub.Options{HealthInterval: t.cfg.HealthInterval, HealthTimeout: t.cfg.HealthTimeout}
	sub, err := hub.Track(t.life.Closing(), prefix, &trackHandler[V]{t: t, keys: keys, forget: forget}, opt)
	if err != nil {
		return kind.Errorf("%w: WithTracking: %w", errs.ErrInvalidOption, err)
	}
	t.track.sub = sub
	return nil
}

// StopTracking ends the tracking, if any.
func (t *Tier[V]) StopTracking() {
	if t != nil && t.track != nil {
		t.track.sub.Close()
	}
}

// TrackingStats are what tracking counted: keys invalidated, flushes, downs.
func (t *Tier[V]) TrackingStats() (received, flushes, downs uint64) {
	if t == nil || t.track == nil {
		return 0, 0, 0
	}
	return t.track.received.Load(), t.track.flushes.Load(), t.track.downs.Load()
}

// trackHandler applies the tracking's events to the tier.
type trackHandler[V any] struct {
	t      *Tier[V]
	keys   Keys
	forget func([]string)
}

func (h *trackHandler[V]) trust() time.Duration {
	return h.t.cfg.HealthInterval + h.t.cfg.HealthTimeout
}

func (h *trackHandler[V]) Invalidate(keys []string) {
	t := h.t
	if keys == nil { // a flush: every key may have changed
		t.track.flushes.Add(1)
		t.Flush()
		t.trackHook(nil)
		return
	}
	var mine []string
	for _, k := range keys {
		// A key of another generation is none the tier holds: the tier
		// keeps entries of the current one only (internal/generation).
		if uk, ok := h.keys.Parse(k); ok {
			mine = append(mine, uk)
		}
	}
	if len(mine) == 0 {
		return // another tracking cache's prefix
	}
	t.track.received.Add(uint64(len(mine)))
	t.Drop(mine)
	h.forget(mine)
	t.trackHook(mine)
}

func (h *trackHandler[V]) Up(since time.Time) {
	// Changes after since arrive from here on; what the tier holds may
	// have missed one before.
	h.t.Flush()
	h.t.SetTrust(true, since.Add(h.trust()).UnixNano())
	if hk := h.t.hooks; hk != nil && hk.OnTracking != nil {
		hk.OnTracking(true)
	}
}

func (h *trackHandler[V]) Healthy(sent time.Time) {
	h.t.SetTrust(true, sent.Add(h.trust()).UnixNano())
}

func (h *trackHandler[V]) Down(err error) {
	t := h.t
	t.SetTrust(true, 0)
	t.track.downs.Add(1)
	t.rec.Report(telemetry.Subscription, "", kind.Errorf("cacheguard: cache: tracking down, local tier off until it is back: %w", err))
	if hk := t.hooks; hk != nil && hk.OnTracking != nil {
		hk.OnTracking(false)
	}
}

func (h *trackHandler[V]) Report(err error) { h.t.rec.Report(telemetry.Subscription, "", err) }

func (t *Tier[V]) trackHook(keys []string) {
	if t.hooks != nil && t.hooks.OnTrack != nil {
		t.hooks.OnTrack(keys)
	}
}
