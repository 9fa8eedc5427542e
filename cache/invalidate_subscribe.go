package cache

import (
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// The subscriber. The invalidation channel is one subscription of the
// client's shared pub/sub connections (internal/pubsub), which run sessions:
// a new connection to the node serving the channel (its master on a cluster,
// the master the Sentinels name under Sentinel), subscribed, checked by a
// PING every health interval, until anything goes wrong; then the tier goes
// down, and the next session dials the node serving the channel then. A
// session is trusted only on the channel's master (writers publish there,
// and a PING answered by another node proves nothing about what the master
// published): on a cluster and under Sentinel it asks its node ROLE when the
// subscription is confirmed and after every health PING, and under Sentinel
// also which node the Sentinels name master now, so that a planned failover,
// after which the demoted master goes on answering PINGs (and ROLE, as a
// master, for seconds), ends the session instead of leaving the tier
// trusting a node nobody publishes on.
//
// The handler maps the session's events onto the tier: Up flushes it and
// lets it serve until interval+timeout after the SUBSCRIBE was sent, each
// health reply extends that to interval+timeout after its PING was sent, and
// Down takes it off until the next Up.

// maxTrackedSources bounds the per-publisher sequence table; past it the
// table starts over (forgetting a source only skips one gap check).
const maxTrackedSources = 4096

// invalHandler applies the invalidation subscription's events. The shared
// connection calls it one event at a time.
type invalHandler[V any] struct {
	c *Cache[V]
	// seqs holds the last sequence number seen from each publisher in
	// this session.
	seqs map[[sourceIDSize]byte]uint64
}

// subscribe subscribes the invalidation channel on the client's shared
// connection.
func (c *Cache[V]) subscribe() {
	opt := pubsub.Options{HealthInterval: c.cfg.local.healthInterval, HealthTimeout: c.cfg.local.healthTimeout}
	if c.hooks != nil && (c.hooks.beforeRole != nil || c.hooks.onNotMaster != nil) {
		opt.Hooks = &pubsub.Hooks{BeforeRole: c.hooks.beforeRole, NotMaster: c.hooks.onNotMaster}
	}
	c.invalSub = c.hub.Subscribe(c.closing, c.channel, &invalHandler[V]{c: c, seqs: map[[sourceIDSize]byte]uint64{}}, opt)
}

func (h *invalHandler[V]) trust() time.Duration {
	return h.c.cfg.local.healthInterval + h.c.cfg.local.healthTimeout
}

func (h *invalHandler[V]) Message(_, payload string) { h.c.onInvalidation(payload, h.seqs) }

func (h *invalHandler[V]) Up(_ string, since time.Time) {
	// Everything published after the SUBSCRIBE was sent arrives from here
	// on; what came before is flushed.
	clear(h.seqs)
	again := false
	select {
	case <-h.c.subscribed:
		again = true
	default: // the first Up: New read the generation (the periodic sync covers the time since: generation.go)
	}
	h.c.subscriptionUp(since.Add(h.trust()))
	if again {
		h.c.resyncGeneration() // a Clear announced in the gap may have been missed (generation.go)
	}
}

func (h *invalHandler[V]) Healthy(_ string, sent time.Time) {
	// A reply to a PING sent at sent: every message published before then
	// has been applied.
	h.c.setTrust(false, sent.Add(h.trust()).UnixNano())
}

func (h *invalHandler[V]) Down(_ string, err error) { h.c.subscriptionDown(err) }

func (h *invalHandler[V]) Report(err error) { h.c.report(logSubscription, "", err) }

func (c *Cache[V]) subscriptionDown(err error) {
	c.setTrust(false, 0)
	if e := c.epoch.Load(); e%2 == 0 {
		c.epoch.CompareAndSwap(e, e+1)
	}
	c.inval.downs.Add(1)
	if pubsub.Refused(err) {
		c.inval.refused.Add(1)
		c.report(logSubscription, "", fmt.Errorf("%w, local tier off until it is granted (the user needs %s; see docs/acl.md): %w",
			ErrSubscriptionRefused, c.channelGrants(), err))
		return
	}
	c.report(logSubscription, "", fmt.Errorf("cacheguard: cache: invalidation subscription down, local tier off until it is back: %w", err))
}

// channelGrants names the channel permissions the cache's subscriptions
// need: its invalidation channel and its fill channels (docs/acl.md). A
// refusal may also come from another channel on the same connection (a lock
// client's, on the same go-redis client).
func (c *Cache[V]) channelGrants() string {
	fills := "&" + wire.FillChannelPrefix + c.cfg.prefix + "* and +subscribe"
	if c.sharded() {
		fills = "&" + c.cfg.prefix + "* and +ssubscribe"
	}
	return "&" + c.channel + " " + fills
}

// subscriptionUp flushes the local tier and lets it serve again, trusting it
// until trustUntil unless a health reply extends that.
func (c *Cache[V]) subscriptionUp(trustUntil time.Time) {
	e := c.epoch.Load()
	if e%2 == 0 {
		// Already up: a resubscription we did not see fail. Go through
		// down first so nothing admitted before is trusted.
		e = c.epoch.Add(1)
	}
	c.localFloor.Store(e + 1) // the epoch it comes up in
	if c.local != nil {
		c.local.Clear()
		c.stats.localFlushes.Add(1)
	}
	c.setTrust(false, trustUntil.UnixNano())
	c.epoch.Add(1)
	c.subscribedOnce.Do(func() { close(c.subscribed) })
	if c.hooks != nil && c.hooks.onSubscribed != nil {
		c.hooks.onSubscribed()
	}
}

// flushLocal clears the local tier when an invalidation may have been lost
// while the subscription stayed up. It moves the epoch on by two (it stays
// up) and the floor with it before clearing: reads in flight then do not
// admit what they fetched before the flush, and an entry one of them stored
// anyway, around the Clear, is of an epoch below the floor and never served,
// not even stale while Redis fails.
func (c *Cache[V]) flushLocal() {
	c.invalSeq.Add(1)
	if e := c.epoch.Load(); e%2 == 0 {
		c.epoch.CompareAndSwap(e, e+2) // a failed swap: it went down, which is as good
	}
	// Clear's caller flushes too (clear.go): the floor only rises.
	for e := c.epoch.Load(); ; {
		f := c.localFloor.Load()
		if f >= e || c.localFloor.CompareAndSwap(f, e) {
			break
		}
	}
	if c.local != nil {
		c.local.Clear()
		c.stats.localFlushes.Add(1)
	}
}

// onInvalidation applies one message; seqs holds the last sequence number
// seen from each publisher in this session.
func (c *Cache[V]) onInvalidation(payload string, seqs map[[sourceIDSize]byte]uint64) {
	m, err := decodeInvalidation([]byte(payload))
	if err != nil {
		c.inval.decodeErrors.Add(1)
		c.flushLocal()
		c.report(logInvalidationBad, "", fmt.Errorf("cacheguard: cache: invalidation on %s (local tier cleared): %w", c.channel, err))
		return
	}
	if m.src == c.source {
		return // applied locally when written
	}
	c.inval.received.Add(1)
	if lag := time.Duration(time.Now().UnixNano() - m.sent); m.sent > 0 && lag >= 0 {
		c.inval.observeLag(lag)
	}
	last, known := seqs[m.src]
	if known && m.seq > last+1 {
		// Messages from this publisher were lost in between; their keys are
		// unknown, so nothing in the tier can be vouched for.
		c.inval.gaps.Add(1)
		c.inval.lost.Add(m.seq - last - 1)
		c.flushLocal()
	}
	if !known || m.seq > last {
		if !known && len(seqs) >= maxTrackedSources {
			clear(seqs)
		}
		seqs[m.src] = m.seq
	}
	c.onAnnouncements(m.keys)
	if len(m.tags) > 0 {
		c.applyTags(m.tags, m.tagTime)
	}
	if c.local != nil {
		c.dropLocal(m.keys)
	}
	c.forget(m.keys)
	if c.hooks != nil && c.hooks.onInvalidate != nil {
		c.hooks.onInvalidate(m.keys)
	}
}
