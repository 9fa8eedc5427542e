package engine

import (
	"context"

	"github.com/cacheguard/cacheguard/cache/internal/lease"
)

// A process that stops while it holds fill leases (a rolling deploy) must
// not leave them in Redis: every other process would wait them out. So the
// engine keeps the leases its loads hold, and Close, after cancelling the
// loads and waiting for them (bounded), releases any still held by a loader
// that ignored its cancellation: that loader's fill, when it returns, finds
// its placeholder gone and is refused like any stale fill.

// hold and unhold keep the registry of leases Close must release.
func (c *Engine[V]) hold(ls ...lease.Lease) {
	for _, l := range ls {
		c.held.Store(l, struct{}{})
	}
}

func (c *Engine[V]) unhold(ls ...lease.Lease) {
	for _, l := range ls {
		c.held.Delete(l)
	}
}

// ReleaseHeld releases every lease still registered, in one pipeline.
func (c *Engine[V]) ReleaseHeld() {
	var ls []lease.Lease
	c.held.Range(func(k, _ any) bool {
		ls = append(ls, k.(lease.Lease))
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
