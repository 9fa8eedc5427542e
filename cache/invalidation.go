package cache

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// listener applies what the invalidation channel hears (internal/bus) to
// the cache: the subscription's state gates the local tier (each Up clears
// it and lets it serve for as long as the health replies vouch; Down takes
// it off), a lost message clears it, another instance's message drops its
// keys here (and makes the read engine forget reads sent before it),
// applies its tags, and moves the cache to a generation it announces. A
// subscription that comes back after a gap makes the cache sync its
// generation with Redis, in case a Clear was announced in the gap.
type listener[V any] struct{ c *Cache[V] }

func (l listener[V]) Up(trustUntil time.Time, again bool) {
	c := l.c
	if c.tier != nil {
		c.tier.Up(trustUntil)
	}
	if h := c.cfg.hooks; h != nil && h.OnSubscribed != nil {
		h.OnSubscribed()
	}
	if again {
		c.gens.Resync()
	}
}

func (l listener[V]) Healthy(trustUntil time.Time) {
	if l.c.tier != nil {
		l.c.tier.SetTrust(false, trustUntil.UnixNano())
	}
}

func (l listener[V]) Down(error) {
	if l.c.tier != nil {
		l.c.tier.Down()
	}
}

func (l listener[V]) Lost() {
	if l.c.tier != nil {
		l.c.tier.Flush()
	}
}

func (l listener[V]) Message(m wire.Invalidation) {
	c := l.c
	c.keys.Announced(m.Keys)
	if len(m.Tags) > 0 {
		c.tier.ApplyTags(m.Tags, m.TagTime)
	}
	if c.tier != nil {
		c.tier.Drop(m.Keys)
	}
	c.eng.Forget(m.Keys)
	if h := c.cfg.hooks; h != nil && h.OnInvalidate != nil {
		h.OnInvalidate(m.Keys)
	}
}

// subscriberHooks are the hooks of the subscription's sessions.
func subscriberHooks(h *hook.Set) *bus.Hooks {
	if h == nil || (h.BeforeRole == nil && h.OnNotMaster == nil) {
		return nil
	}
	return &bus.Hooks{BeforeRole: h.BeforeRole, NotMaster: h.OnNotMaster}
}
