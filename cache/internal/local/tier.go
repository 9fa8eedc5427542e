package local

import (
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/life"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/pubsub"
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
	floor    atomic.Uint64
	clock    coarseClock   // what freshness is judged by (clock.go)
	invalSeq atomic.Uint64 // bumped by every invalidation
	locks    admitLocks    // orders admissions against invalidations (order.go)
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
	t := &Tier[V]{cfg: cfg, store: store, life: g, rec: rec, hooks: hooks}
	t.clock.start()
	t.otter, _ = store.(*OtterStore[V])
	t.epoch.Store(1) // down until the first subscription is confirmed
	g.Go(func() { t.clock.run(g.Closing().Done()) })
	return t
}

// Store is the tier's store.
func (t *Tier[V]) Store() Store[V] { return t.store }

// Close closes the store.
func (t *Tier[V]) Close() { t.store.Close() }

// Hot is the hot-key detector (nil with AdmitAll).
func (t *Tier[V]) Hot() HotKeys { return t.cfg.Hot }

// tracking is a tier's tracking state (nil without WithTracking).
type tracking struct {
	sub *pubsub.Tracker
	// The trust (unix nanos) each source vouches for; trustUntil is the
	// smaller. The Hub serializes the handlers that write them.
	inval, track atomic.Int64

	received, flushes, downs atomic.Uint64
}
