package cache

import (
	"time"

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
}
