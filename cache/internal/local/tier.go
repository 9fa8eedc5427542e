package local

import (
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// HotKeys decides which keys the tier admits (cache.HotKeys).
type HotKeys interface {
	Record(key string)
	IsHot(key string) bool
}

// Config is the tier's; New's caller checked it.
type Config struct {
	TTL      time.Duration // fresh for this long, jittered
	Stale    time.Duration // then servable while Redis fails for this long
	Jitter   float64
	AdmitAll bool    // else Hot decides
	Hot      HotKeys // nil with AdmitAll
	// HealthInterval + HealthTimeout is how long a health reply vouches
	// for the tier (tracking's, as the subscription's).
	HealthInterval, HealthTimeout time.Duration
}

// Tier is a cache's local tier. A nil *Tier is no tier: Clock reads zero
// and ServableStale is false.
type Tier[V any] struct {
	cfg   Config
	store Store[V]
	// otter is store when it is the default one, called without an
	// interface on a hit (Get).
	otter *OtterStore[V]

	epoch atomic.Uint64 // odd while a source of invalidations is down
	// floor is the epoch of the last clear of the tier (a flush, or the
	// subscription coming back). An entry of an older epoch was stored
	// around that clear and is never served, not even stale while Redis
	// fails. Up and Flush write it, with the current epoch, which only
	// grows; it never goes down.
	floor     atomic.Uint64
	coarseNow atomic.Int64  // unix nanos, advanced every coarseTick (clock.go)
	clockIdle atomic.Bool   // the coarse clock is paused until the next read
	clockUsed atomic.Bool   // a read happened since the last tick
	clockWake chan struct{} // wakes a paused coarse clock
	invalSeq  atomic.Uint64 // bumped by every invalidation
	locks     admitLocks    // orders admissions against invalidations (order.go)
	// trustUntil (unix nanos) is how long the tier may be served on the
	// strength of the last health reply (trust.go).
	trustUntil atomic.Int64
	tagTimes   tagTable  // the tag times this instance knows (tags.go)
	track      *tracking // WithTracking (tracking.go); nil without

	life  *life.Group
	rec   *telemetry.Recorder
	hooks *hook.Set
}

// New returns a tier over store, down until its first Up, and starts its
// coarse clock (until Close of g).
func New[V any](cfg Config, store Store[V], g *life.Group, rec *telemetry.Recorder, hooks *hook.Set) *Tier[V] {
	t := &Tier[V]{cfg: cfg, store: store, life: g, rec: rec, hooks: hooks, clockWake: make(chan struct{}, 1)}
	t.otter, _ = store.(*OtterStore[V])
	t.epoch.Store(1) // down until the first subscription is confirmed
	t.coarseNow.Store(time.Now().UnixNano())
	g.Go(t.runCoarseClock)
	return t
}

// Store is the tier's store.
func (t *Tier[V]) Store() Store[V] { return t.store }

// Close closes the store.
func (t *Tier[V]) Close() { t.store.Close() }

// Hot is the hot-key detector (nil with AdmitAll).
func (t *Tier[V]) Hot() HotKeys { return t.cfg.Hot }

// Get returns the entry for key if it may be served as fresh, and the
// entry itself (possibly stale) for the Redis-failure fallback.
func (t *Tier[V]) Get(key string) (fresh bool, e *Entry[V]) {
	t.touchClock()
	var ok bool
	if t.otter != nil {
		e, ok = t.otter.Get(key)
	} else {
		e, ok = t.store.Get(key)
	}
	if !ok {
		return false, nil
	}
	now := t.coarseNow.Load()
	fresh = now < e.fresh && now < t.trustUntil.Load() && e.epoch == t.epoch.Load()
	if e.tagged != nil {
		valid, servable := t.tagsValid(e, now)
		if !servable {
			return false, nil
		}
		fresh = fresh && valid
	}
	return fresh, e
}

// Admit puts a value that just came from Redis or a load into the tier,
// if the key qualifies, the subscription is up and nothing invalidated
// anything since before was read (the clock taken before going to Redis).
func (t *Tier[V]) Admit(key string, r entry.Result[V], size int, before Clock) {
	if t == nil || r.NoLocal || before.epoch%2 == 1 || before != t.Clock() {
		return // subscription down, or an invalidation arrived since the read
	}
	epoch := before.epoch
	if !t.cfg.AdmitAll && !t.cfg.Hot.IsHot(key) {
		return
	}
	now := time.Now()
	ttl := entry.Jittered(t.cfg.TTL, t.cfg.Jitter)
	e := &Entry[V]{Value: r.V, Null: r.Null, epoch: epoch,
		fresh: now.Add(ttl).UnixNano(), stale: now.Add(ttl + t.cfg.Stale).UnixNano()}
	e.tagged = r.Tagged
	// Checked again and stored under the key's lock: an invalidation
	// either sees the entry and deletes it, or made this check fail
	// (order.go).
	mu := t.locks.of(key)
	mu.Lock()
	defer mu.Unlock()
	if t.Clock() != before {
		return
	}
	if t.hooks != nil && t.hooks.BeforeLocalSet != nil {
		t.hooks.BeforeLocalSet(key)
	}
	t.store.Set(key, e, int64(size+len(key)+64), ttl+t.cfg.Stale)
}

// Clock is read before going to Redis and compared before admitting what
// came back: if the subscription went down or any invalidation arrived in
// between, the value may already be stale and is not admitted.
type Clock struct{ epoch, seq uint64 }

// Clock is the tier's clock now (zero without a tier).
func (t *Tier[V]) Clock() Clock {
	if t == nil {
		return Clock{}
	}
	return Clock{t.epoch.Load(), t.invalSeq.Load()}
}

// ServableStale reports whether e, an entry past its freshness, may answer
// a Get that Redis (or a rate limit) cannot: it is within the stale bound
// and was admitted since the tier was last cleared.
func (t *Tier[V]) ServableStale(e *Entry[V]) bool {
	return e != nil && t.coarseNow.Load() < e.stale && e.epoch >= t.floor.Load()
}
