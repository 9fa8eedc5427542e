package engine

import (
	"context"

	"github.com/cacheguard/cacheguard/cache/internal/lease"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// The engine keeps a registry of the leases its fills may hold: each round
// of fillMany registers its leases before it sends their SET NX and removes
// them when the round ends. It serves two ends.
//
// A process that stops while it holds fill leases (a rolling deploy) must
// not leave them in Redis: every other process would wait them out. So
// Close, after cancelling the loads and waiting for them (bounded),
// releases any still registered, held by a loader that ignored its
// cancellation: that loader's fill, when it returns, finds its placeholder
// gone and is refused like any stale fill (a lease registered and not taken
// is released as well, which changes nothing: the script leaves keys that
// are not ours alone).
//
// And a placeholder of this cache's own (lease.Leases.Own) is held by one of
// its fills exactly when it is registered: one cache can have two fills of
// one Redis key under way, as when a waiter of the generation before a
// Clear looks again in the new one, where a Get of its own holds the lease.
// Only a placeholder of its own that no fill holds is taken over (Own's
// failover case); one that is registered is waited for like any other.

// hold and unhold keep the registry.
func (c *Engine[V]) hold(ls ...lease.Lease) {
	for _, l := range ls {
		c.held.Store(l.Placeholder(), l)
	}
}

func (c *Engine[V]) unhold(ls ...lease.Lease) {
	for _, l := range ls {
		c.held.Delete(l.Placeholder())
	}
}

// orphan reports prev, a placeholder read under a key, as one this cache
// wrote and none of its fills holds: taken over rather than waited for.
func (c *Engine[V]) orphan(prev []byte) bool {
	if !c.Leases.Own(prev) {
		return false
	}
	_, held := c.held.Load(string(wire.PlaceholderBase(prev)))
	return !held
}

// ReleaseHeld releases every lease still registered, in one pipeline.
func (c *Engine[V]) ReleaseHeld() {
	var ls []lease.Lease
	c.held.Range(func(_, l any) bool {
		ls = append(ls, l.(lease.Lease))
		return true
	})
	if len(ls) > 0 {
		c.Leases.Release(context.Background(), ls)
	}
}

// Held counts the leases registered (tests).
func (c *Engine[V]) Held() int {
	n := 0
	c.held.Range(func(any, any) bool { n++; return true })
	return n
}
