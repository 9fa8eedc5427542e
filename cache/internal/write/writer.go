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
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/bus"
	"github.com/cacheguard/cacheguard/cache/internal/engine"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/call"
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
	if c.Copies != nil {
		c.deleteCopies(ctx, keys)
	}
	c.bus.Publish(ctx, keys)
}

// replicated waits, when reads go to replicas, until those replicas hold
// the completed write of rkeys, and the deletes of their hot-key copies
// (transport.Replicas); otherwise it returns an error naming op and key
// that wraps ErrReplicaLag.
func (c *Writer[V]) replicated(ctx context.Context, op, key string, rkeys []string) error {
	if c.Replicas == nil {
		return nil
	}
	if c.Copies != nil {
		for _, k := range rkeys {
			rkeys = append(rkeys, c.Copies.Keys(ctx, k)...)
		}
	}
	c.Rec.ReplicaWaits.Add(1)
	if err := c.Replicas.Wait(ctx, c.Redis.Calls(), rkeys); err != nil {
		if errors.Is(err, errs.ErrReplicaLag) {
			c.Rec.ReplicaLags.Add(1)
		}
		return c.Redis.Error(key, op, err)
	}
	return nil
}

// deleteCopies deletes the hot-key copies of keys (WithHotKeyCopies),
// detached from ctx and for at most a copy's TTL: past that, a copy the
// write could not delete has expired anyway. The caller waits until it is
// done or ctx ends. A failure is reported; the write stands.
func (c *Writer[V]) deleteCopies(ctx context.Context, keys []string) {
	rkeys := c.Keys.Keys(keys)
	report := func(_ struct{}, err error) {
		if err != nil {
			c.Rec.Report(telemetry.CopyFailed, keys[0], c.Redis.Error(keys[0], "delete copies", err))
		}
	}
	_, err := call.Do(c.Redis.Calls(), call.Detached(ctx, ctx.Err() != nil), c.Copies.TTL, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.Copies.Delete(ctx, rkeys)
	}, report)
	if !errors.Is(err, call.ErrAbandoned) {
		report(struct{}{}, err)
	}
}
