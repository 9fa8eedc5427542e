// Package write is the cache's write path: every write of keys (Set,
// Delete, the versioned writes, MarkStale, DeleteKeepingVersion) runs
// through one skeleton (write.go: the keys checked, the breaker, a call
// bounded by the caller's context, and once Redis has it, the keys
// forgotten by the read engine and invalidated in every instance's local
// tier), and InvalidateTags through the same bounds (tags.go). A key's
// version is a high-water mark every write keeps (versionkeep.go).
package write

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/cache/internal/engine"
)

// Config is the write path's.
type Config struct {
	LoadTimeout time.Duration // how long a load may run (a tag's time outlives it)
}

// Writer writes one cache's keys. Make it with New.
type Writer[V any] struct {
	engine.Parts[V]
	cfg Config
	bus *bus.Bus
	eng *engine.Engine[V]
}

// New returns the write path of a cache whose reads eng runs.
func New[V any](cfg Config, p engine.Parts[V], b *bus.Bus, eng *engine.Engine[V]) *Writer[V] {
	return &Writer[V]{Parts: p, cfg: cfg, bus: b, eng: eng}
}

// afterWrite runs after a write to keys landed in Redis: it drops them from
// the local tier and tells the other instances to.
//
// It publishes even when this instance has no local tier: a writer service
// often has none while its readers do. It returns once the message is sent
// (or given up), or when ctx ends, whichever comes first; in the second case
// the message is still sent, detached from ctx.
func (c *Writer[V]) afterWrite(ctx context.Context, keys ...string) {
	if c.Tier != nil {
		c.Tier.Drop(keys)
	}
	c.bus.Publish(ctx, keys)
}
