package cache

import (
	"fmt"
	"time"
)

// The local tier keeps decoded values in process memory, so that a hot key is
// served in tens of nanoseconds instead of a Redis round trip. It is small and
// short-lived on purpose: entries are fresh for the local TTL (1 s by default,
// jittered), every write through any instance drops the key everywhere (see
// invalidate.go), and while the invalidation subscription is down nothing is
// served from it as fresh. A fresh-expired entry is kept a little longer
// (WithLocalStale) only to answer for a key while Redis is failing.

// LocalStore is the in-process tier's storage. Two are built in: otter v2,
// the default (WithLocal, local_otter.go), and ristretto v2
// (WithLocalRistretto, local_ristretto.go); another can be plugged in with
// WithLocalStore. Package localstoretest checks an implementation against
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
type LocalStore[V any] interface {
	Get(key string) (*LocalEntry[V], bool)
	// Set stores e with a cost in bytes; e is of use for ttl.
	Set(key string, e *LocalEntry[V], cost int64, ttl time.Duration)
	Del(key string)
	Clear()
	Close()
}

// LocalEntry is what the local tier stores for a key.
type LocalEntry[V any] struct {
	Value V
	Null  bool // a cached absence

	fresh int64  // unix nanos: served as a hit until then
	stale int64  // unix nanos: served only while Redis fails, until then
	epoch uint64 // subscription epoch it was admitted in
	// weight is the entry's cost in bytes as the default store weighs it
	// (local_otter.go).
	weight uint32

	// tagged is set for a tagged entry only: an untagged one (the usual
	// kind) pays one pointer for the feature, not a slice and a time.
	// Its tags are checked on every hit (tags_local.go).
	tagged *tagStamp
}

// HotKeys decides which keys the local tier admits. Record is called on every
// Get and must be cheap; IsHot when a value comes back from Redis. The hotkey
// package provides a sliding-window top-k detector.
type HotKeys interface {
	Record(key string)
	IsHot(key string) bool
}

type localConfig struct {
	maxBytes  int64
	ristretto bool   // WithLocalRistretto
	store     any    // LocalStore[V], checked in New
	storeBy   string // the option that chose the store: only one may
	ttl       time.Duration
	stale     time.Duration
	admitAll  bool
	hot       HotKeys
	channel   string

	healthInterval, healthTimeout time.Duration // WithInvalidationHealthCheck
	tracking                      bool          // WithTracking (tracking.go)
}

// WithLocal turns on the local tier with room for maxBytes of values, on
// otter v2, the default store. Admission follows WithHotKeys (only hot keys,
// the usual choice) or WithLocalAdmitAll; one of them is required. WithLocal,
// WithLocalRistretto and WithLocalStore each choose the store: give one.
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
// serves a local hit with less work (see the package comment, "Local
// stores"). Admission as for WithLocal.
func WithLocalRistretto(maxBytes int64) Option {
	return func(c *config) {
		c.chooseLocalStore("WithLocalRistretto")
		c.checkLocalSize(maxBytes)
		c.local.maxBytes, c.local.ristretto = maxBytes, true
	}
}

// WithLocalStore turns on the local tier with a store of your own (check it
// with package localstoretest). The cache owns s from New on: it closes s
// when it closes, and New closes s when it fails, for whatever reason.
func WithLocalStore[V any](s LocalStore[V]) Option {
	return func(c *config) {
		c.chooseLocalStore("WithLocalStore")
		if s == nil {
			c.errs.Invalid("nil local store")
		}
		c.local.store = s
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

func defaultLocalConfig() localConfig {
	return localConfig{ttl: time.Second, stale: 10 * time.Second,
		healthInterval: time.Second, healthTimeout: time.Second}
}

func (l *localConfig) enabled() bool { return l.maxBytes > 0 || l.store != nil }

// newLocalStore builds the configured store for V.
func newLocalStore[V any](l localConfig) (LocalStore[V], error) {
	if l.store != nil {
		s, ok := l.store.(LocalStore[V])
		if !ok {
			return nil, fmt.Errorf("%w: local store is a %T, not a LocalStore for this value type", ErrInvalidOption, l.store)
		}
		return s, nil
	}
	if l.ristretto {
		return newRistrettoStore[V](l.maxBytes)
	}
	return newOtterStore[V](l.maxBytes)
}

// localGet returns the local entry for key if it may be served as fresh, and
// the entry itself (possibly stale) for the Redis-failure fallback.
func (c *Cache[V]) localGet(key string) (fresh bool, e *LocalEntry[V]) {
	c.touchClock()
	var ok bool
	if c.otter != nil {
		e, ok = c.otter.Get(key)
	} else {
		e, ok = c.local.Get(key)
	}
	if !ok {
		return false, nil
	}
	now := c.coarseNow.Load()
	fresh = now < e.fresh && now < c.trustUntil.Load() && e.epoch == c.epoch.Load()
	if e.tagged != nil {
		valid, servable := c.localTagsValid(e, now)
		if !servable {
			return false, nil
		}
		fresh = fresh && valid
	}
	return fresh, e
}

// admit puts a value that just came from Redis or a load into the local tier,
// if the key qualifies and the invalidation subscription is up.
func (c *Cache[V]) admit(key string, r result[V], size int, before localClock) {
	if c.local == nil || r.noLocal || before.epoch%2 == 1 || before != c.localClock() {
		return // subscription down, or an invalidation arrived since the read
	}
	epoch := before.epoch
	if !c.cfg.local.admitAll && !c.cfg.local.hot.IsHot(key) {
		return
	}
	now := time.Now()
	ttl := jittered(c.cfg.local.ttl, c.cfg.jitter)
	e := &LocalEntry[V]{Value: r.v, Null: r.null, epoch: epoch,
		fresh: now.Add(ttl).UnixNano(), stale: now.Add(ttl + c.cfg.local.stale).UnixNano()}
	e.tagged = r.tagged
	// Checked again and stored under the key's lock: an invalidation
	// either sees the entry and deletes it, or made this check fail
	// (local_order.go).
	mu := c.admitLocks.of(key)
	mu.Lock()
	defer mu.Unlock()
	if c.localClock() != before {
		return
	}
	if c.hooks != nil && c.hooks.beforeLocalSet != nil {
		c.hooks.beforeLocalSet(key)
	}
	c.local.Set(key, e, int64(size+len(key)+64), ttl+c.cfg.local.stale)
}

// localClock is read before going to Redis and compared before admitting what
// came back: if the subscription went down or any invalidation arrived in
// between, the value may already be stale and is not admitted.
type localClock struct{ epoch, seq uint64 }

func (c *Cache[V]) localClock() localClock {
	if c.local == nil {
		return localClock{}
	}
	return localClock{c.epoch.Load(), c.invalSeq.Load()}
}

// coarseTick is the resolution of the clock the local tier's freshness checks
// read. Reading the wall clock on every local hit would cost more than the
// rest of the hit; one tick is negligible against a local TTL of a second.
const coarseTick = time.Millisecond

// clockIdleTicks is how many ticks without a local read pause the clock.
const clockIdleTicks = 1000

// runCoarseClock keeps coarseNow within a tick of the wall clock until Close,
// while the local tier is read. After clockIdleTicks without a read it pauses
// (an idle cache costs no CPU) until touchClock wakes it.
func (c *Cache[V]) runCoarseClock() {
	t := time.NewTicker(coarseTick)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-c.closing.Done():
			return
		case now := <-t.C:
			c.coarseNow.Store(now.UnixNano())
			if c.clockUsed.Swap(false) {
				idle = 0
				continue
			}
			if idle++; idle < clockIdleTicks {
				continue
			}
			t.Stop()
			c.clockIdle.Store(true)
			select {
			case <-c.closing.Done():
				return
			case <-c.clockWake:
			}
			idle = 0
			t.Reset(coarseTick)
		}
	}
}

// touchClock marks a local read; the first read after a pause brings the
// clock up to date itself (so it never judges freshness by the time the
// clock paused) and wakes the ticker. Reads keep to loads while nothing
// changes, so the hit path writes no shared memory.
func (c *Cache[V]) touchClock() {
	if !c.clockUsed.Load() {
		c.clockUsed.Store(true)
	}
	if c.clockIdle.Load() && c.clockIdle.CompareAndSwap(true, false) {
		c.coarseNow.Store(time.Now().UnixNano())
		select {
		case c.clockWake <- struct{}{}:
		default:
		}
	}
}

// WithInvalidationHealthCheck sets how often the invalidation subscriber
// checks its connection with a PING (default 1 s) and how long it waits for
// the reply (default 1 s). The local tier is served only while the last
// reply is recent, so interval + timeout bounds how long a local entry can be
// served stale when the subscriber's connection dies silently (see the
// package comment); a missed reply makes the subscriber reconnect. The
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

// servableStale reports whether e, a local entry past its freshness, may
// answer a Get that Redis (or a rate limit) cannot: it is within the stale
// bound and was admitted since the tier was last cleared.
func (c *Cache[V]) servableStale(e *LocalEntry[V]) bool {
	return e != nil && c.coarseNow.Load() < e.stale && e.epoch >= c.localFloor.Load()
}
