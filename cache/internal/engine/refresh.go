package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Probabilistic early refresh (XFetch, Vattani et al., VLDB 2015). On a hit,
// the entry is refreshed ahead of its expiry when
//
//	now + δ·β·(−ln u) ≥ expiry,  u uniform in (0, 1]
//
// where δ is how long its last load took. The closer the expiry and the
// slower the load, the likelier a refresh; a hot key is then reloaded by one
// caller shortly before it expires, instead of by a stampede after.
//
// Across processes, the refresher marks the entry by setting the refreshing flag in
// its header (SETRANGE keeps the TTL) if the header is still the one it read,
// so others skip; it then replaces the entry only if the header is still the
// marked one. A Delete, Set or MarkStale in between changes or removes the
// header (MarkStale advances its nonce, so a later refresh marking the entry
// again cannot recreate it), so the refreshed value is refused like any stale
// fill.

// markRefreshScript sets the flags byte to ARGV[2] if the entry's header is
// still ARGV[1].
var markRefreshScript = redis.NewScript(wire.Lua(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, HEADER_SIZE) == ARGV[1] then
	redis.call('SETRANGE', KEYS[1], FLAGS_AT - 1, ARGV[2])
	return 1
end
return 0
`))

// refreshFillScript replaces the entry with ARGV[2] (PX ARGV[3]) if its header
// is still ARGV[1]; an empty ARGV[2] (a value not to be cached, over an
// entry without a version) removes the entry instead.
var refreshFillScript = redis.NewScript(wire.Lua(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, HEADER_SIZE) == ARGV[1] then
	if ARGV[2] == '' then
		redis.call('UNLINK', KEYS[1])
	else
		redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
	end
	return 1
end
return 0
`))

// shouldRefresh applies the XFetch test.
func (c *Engine[V]) shouldRefresh(env wire.Envelope) bool {
	if env.Flags&wire.FlagRefreshing != 0 {
		return false
	}
	if env.Flags&wire.FlagStale != 0 {
		return true // stale-while-revalidate: the first reader refreshes
	}
	beta := c.cfg.EarlyBeta
	if beta == 0 {
		return false
	}
	u := 1 - rand.Float64() // (0, 1]
	if c.Hooks != nil && c.Hooks.Rand != nil {
		u = c.Hooks.Rand()
	}
	// Compared in floating point: the gap can exceed what a Duration holds
	// (a large beta, a slow load), and converted it would wrap negative.
	delta := max(env.Delta, time.Millisecond)
	gap := float64(delta) * beta * -math.Log(u)
	return gap >= float64(env.Expiry.Sub(c.Format.Now()))
}

// maybeRefresh starts a background refresh of key if XFetch says so and none
// of this generation of the entry is under way in this process.
//
// c.refreshing holds, per key, the header of the entry being refreshed. A
// refresh of an older header does not hold a new one back: it was for an
// entry since replaced or marked stale again (its own fill will be refused,
// or already landed and was then marked), exactly as a write makes later
// Gets start their own fill instead of joining an older one.
//
// The returned channel (nil when no refresh started) receives the refresh's
// outcome once it ends: what WithSoftLoadTimeout waits for (soft.go).
func (c *Engine[V]) maybeRefresh(ctx context.Context, key, rkey string, env wire.Envelope, load Loader[V]) <-chan refreshed[V] {
	if !c.shouldRefresh(env) {
		return nil
	}
	gen := string(env.Header)
	for {
		old, busy := c.refreshing.LoadOrStore(rkey, gen)
		if !busy {
			break
		}
		if old == gen {
			return nil
		}
		if c.refreshing.CompareAndSwap(rkey, old, gen) {
			break
		}
	}
	header := []byte(gen)
	// The refresh is no part of the call that started it: its load must not
	// mark that call's observation.
	rctx := telemetry.Unobserved(ctx)
	done := make(chan refreshed[V], 1)
	started := c.Life.Go(func() {
		defer c.refreshing.CompareAndDelete(rkey, gen)
		var out refreshed[V]
		defer func() { done <- out }()
		out, err := life.Detached(c.Life, rctx, "refresh", key, func(ctx context.Context) (refreshed[V], error) {
			return c.refresh(ctx, key, rkey, header, load), nil
		})
		if err != nil { // a panic
			c.Rec.Report(telemetry.RefreshFailed, key, err)
		}
	})
	if !started {
		c.refreshing.CompareAndDelete(rkey, gen)
		return nil
	}
	c.Rec.Refreshed(ctx)
	return done
}

// refreshed is the outcome of a refresh: the value it installed, if landed
// (or, for a value not to be cached, the value whose entry it removed).
type refreshed[V any] struct {
	R      entry.Result[V]
	landed bool
}

func (c *Engine[V]) refresh(ctx context.Context, key, rkey string, header []byte, load Loader[V]) (out refreshed[V]) {
	marked := append([]byte(nil), header...)
	marked[wire.FlagsOffset] |= wire.FlagRefreshing
	ok, err := markRefreshScript.Run(ctx, c.Redis.Client(), []string{rkey}, header, marked[wire.FlagsOffset:wire.FlagsOffset+1]).Int()
	if err != nil {
		c.Rec.Report(telemetry.RefreshFailed, key, c.Redis.Error(key, "mark refresh", err))
		return out
	}
	if ok == 0 {
		return out // changed since we read it: someone else refreshed, deleted or set it
	}
	c.Rec.EarlyRefresh.Add(1)
	if c.Hooks != nil && c.Hooks.OnRefresh != nil {
		c.Hooks.OnRefresh(key)
	}
	created := c.Format.Now()
	start := time.Now()
	v, err := c.callLoader(ctx, key, load)
	delta := time.Since(start)
	null := errors.Is(err, errs.ErrNotFound)
	var payload []byte
	var tags []string
	base, cacheable := c.Format.TTL(), true
	switch {
	case null:
	case err != nil:
		// The entry keeps serving until it expires; then the ordinary miss
		// path loads it under a lease.
		c.Rec.LoadErrors.Add(1)
		c.Rec.Report(telemetry.RefreshFailed, key, err)
		return out
	default:
		if base, cacheable = c.Format.ValueTTL(key, v); !cacheable {
			break // the entry goes (entry.Format.ValueTTL)
		}
		if payload, tags, err = c.Format.EncodeTagged(key, v); err != nil {
			c.Format.Uncacheable(key, err)
			return out
		}
	}
	// Keep the replaced entry's version, so that a versioned write older
	// than it is still refused after the refresh.
	version := binary.BigEndian.Uint64(header[4:12])
	var env []byte
	var ttl time.Duration
	switch {
	case cacheable:
		env, ttl = c.Format.TaggedEntry(null, version, delta, payload, base, tags, created, nil)
	case version != 0: // a version tombstone, as SetVersioned leaves
		env, ttl = wire.AppendTombstone(nil, version), c.Format.NullTTL()
	} // else env stays empty: the entry is removed, as Set does
	n, err := refreshFillScript.Run(ctx, c.Redis.Client(), []string{rkey}, marked, env, entry.PX(ttl)).Int()
	if err != nil {
		c.Rec.Report(telemetry.RefreshFailed, key, c.Redis.Error(key, "refresh fill", err))
		return out
	}
	if n == 0 {
		c.Rec.RejectedFills.Add(1)
	}
	if c.Hooks != nil && c.Hooks.OnFill != nil {
		c.Hooks.OnFill(key, n == 1)
	}
	if !cacheable { // served, not cached: kept out of the local tier too
		return refreshed[V]{R: entry.Result[V]{V: v, NoLocal: true}, landed: n == 1}
	}
	return refreshed[V]{R: entry.Result[V]{V: v, Null: null, Size: len(env)}, landed: n == 1}
}
