package cache

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/local"
)

// The local tier keeps decoded values in process memory, so that a hot key is
// served in tens of nanoseconds instead of a Redis round trip. It is small and
// short-lived on purpose: entries are fresh for the local TTL (1 s by default,
// jittered), every write through any instance drops the key everywhere (see
// docs/cache.md, "Staleness of the local tier"), and while the
// invalidation subscription is down nothing is served from it as fresh. A
// fresh-expired entry is kept a little longer (WithLocalStale) only to answer
// for a key while Redis is failing.

// LocalStore is the in-process tier's storage. Two are built in: otter v2,
// the default (WithLocal), and ristretto v2 (WithLocalRistretto); another
// can be plugged in with Values.LocalStore. Package localstoretest checks an implementation against
// this contract:
//
//   - Safe for concurrent use. Set may drop an entry (admission policies
//     do) and may store it later, on a goroutine of its own (ristretto does).
//   - Once Del or Clear returned, Get must not return an entry Set before
//     it was called (a store that applies Sets later must apply or discard
//     them first).
//   - cost is the entry's size in bytes; the store keeps the sum of the
//     costs it holds within its size.
//   - ttl is how long the entry can be of use (its local TTL and stale
//     bound): the store may drop it then, or keep it until it is evicted or
//     replaced; the cache checks every entry's age itself and never serves
//     one past it. Neither built-in store expires entries (so that no Get
//     reads the clock).
//   - Close may be called while other calls are still finishing, and more
//     than once; calls after it must do nothing (Get reports a miss). The
//     cache owns its store: its Close closes the store, and no goroutine of
//     the store may outlive that.
//
// Its methods:
//
//	Get(key string) (*LocalEntry[V], bool)
//	Set(key string, e *LocalEntry[V], cost int64, ttl time.Duration) // e is of use for ttl
//	Del(key string)
//	Clear()
//	Close()
type LocalStore[V any] = local.Store[V]

// LocalEntry is what the local tier stores for a key: its Value, or Null
// for a cached absence, and the tier's own bookkeeping (when it stops being
// fresh, its stale bound, the subscription epoch it was admitted in, its
// tags), which a store keeps as it is.
type LocalEntry[V any] = local.Entry[V]

// HotKeys decides which keys the local tier admits. Record is called on every
// Get and must be cheap; IsHot when a value comes back from Redis. The hotkey
// package provides a sliding-window top-k detector.
type HotKeys interface {
	Record(key string)
	IsHot(key string) bool
}

// WithLocal turns on the local tier with room for maxBytes of values, on
// otter v2, the default store. Admission follows WithHotKeys (only hot keys,
// the usual choice) or WithLocalAdmitAll; one of them is required. WithLocal,
// WithLocalRistretto and Values.LocalStore each choose the store: give one.
func WithLocal(maxBytes int64) Option {
	return func(c *config) {
		c.chooseLocalStore("WithLocal")
		c.checkLocalSize(maxBytes)
		c.local.maxBytes, c.local.ristretto = maxBytes, false
	}
}

// WithLocalRistretto turns on the local tier with room for maxBytes of
// values, on ristretto v2 instead of otter. Pick it where ristretto is what
// your service already runs and tunes; otherwise keep WithLocal, which
// serves a local hit with less work (see docs/cache.md, "Local
// stores"). Admission as for WithLocal.
func WithLocalRistretto(maxBytes int64) Option {
	return func(c *config) {
		c.chooseLocalStore("WithLocalRistretto")
		c.checkLocalSize(maxBytes)
		c.local.maxBytes, c.local.ristretto = maxBytes, true
	}
}

func (c *config) chooseLocalStore(by string) {
	if c.local.storeBy != "" && c.local.storeBy != by {
		c.errs.Invalid("%s and %s both choose the local store: give one", c.local.storeBy, by)
	}
	c.local.storeBy = by
}

func (c *config) checkLocalSize(maxBytes int64) {
	if maxBytes <= 0 {
		c.errs.Invalid("local tier size %d must be positive", maxBytes)
	}
}

// WithLocalTTL sets how long a local entry is served as fresh (default 1 s,
// jittered like Redis TTLs). It bounds how stale a local value can be when an
// invalidation message is lost.
func WithLocalTTL(ttl time.Duration) Option {
	return func(c *config) {
		c.checkTTL("local TTL", ttl, 0) // kept in memory: any positive TTL
		c.local.ttl = ttl
	}
}

// WithLocalStale sets how long past its local TTL an entry may still be served
// while Redis is failing (default 10 s; 0 turns that off). Hot keys then keep
// being answered from memory instead of sending their traffic to the database.
func WithLocalStale(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs.Invalid("local stale bound %v must not be negative", d)
		}
		c.local.stale = d
	}
}

// WithHotKeys admits to the local tier only the keys hot says are hot.
func WithHotKeys(hot HotKeys) Option {
	return func(c *config) {
		if hot == nil {
			c.errs.Invalid("nil hot-key detector")
		}
		c.local.hot = hot
	}
}

// WithLocalAdmitAll admits every key to the local tier.
func WithLocalAdmitAll() Option { return func(c *config) { c.local.admitAll = true } }

// WithInvalidationChannel names the pub/sub channel on which instances sharing
// a prefix tell each other to drop keys from their local tiers (default
// "cacheguard:invalidate:" + prefix).
func WithInvalidationChannel(name string) Option {
	return func(c *config) {
		if name == "" {
			c.errs.Invalid("empty invalidation channel")
		}
		c.local.channel = name
	}
}

// newLocalStore builds the configured store for V, unless one was given.
func newLocalStore[V any](l localConfig, given LocalStore[V]) (LocalStore[V], error) {
	if given != nil {
		return given, nil
	}
	if l.ristretto {
		return local.NewRistrettoStore[V](l.maxBytes)
	}
	return local.NewOtterStore[V](l.maxBytes)
}

// WithInvalidationHealthCheck sets how often the invalidation subscriber
// checks its connection with a PING (default 1 s) and how long it waits for
// the reply (default 1 s). The local tier is served only while the last
// reply is recent, so interval + timeout bounds how long a local entry can be
// served stale when the subscriber's connection dies silently (see the
// package comment and docs/cache.md); a missed reply makes the subscriber reconnect. The
// timeout also bounds each of New's questions to Redis and each generation
// sync.
func WithInvalidationHealthCheck(interval, timeout time.Duration) Option {
	return func(c *config) {
		if interval <= 0 || timeout <= 0 {
			c.errs.Invalid("invalidation health check interval %v and timeout %v must be positive", interval, timeout)
		}
		c.local.healthInterval, c.local.healthTimeout = interval, timeout
	}
}
