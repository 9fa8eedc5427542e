package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/singleflight"
)

// Loader loads the value for key from the source of truth. It returns
// ErrNotFound (or an error wrapping it) when there is no such row.
type Loader[V any] func(ctx context.Context, key string) (V, error)

// Cache is a read-through cache for values of type V in front of a loader.
// It is safe for concurrent use. Create it with New and release it with Close.
type Cache[V any] struct {
	rdb   redis.UniversalClient
	cfg   config
	codec valueCodec[V]
	stats counters
	log   *slog.Logger
	logs  *logAggregator // report's lines, one per kind per interval (logagg.go)

	// closing is cancelled by Close; detached loads and background refreshes
	// derive from it so that none outlives Close.
	closing context.Context
	close   context.CancelFunc
	bg      sync.WaitGroup
	mu      sync.RWMutex // orders bg.Add against Close's bg.Wait
	closed  atomic.Bool
	// calls bounds the Redis calls that must end by the caller's context
	// or a timeout of their own on any client (internal/call); flight
	// counts those left running at their deadline, for Close.
	calls  call.Bound
	flight call.Flight

	refreshing sync.Map // rkey -> header (string) of the entry being refreshed here
	held       sync.Map // lease -> struct{}: leases taken here and not yet given up (close.go)

	// The local tier (nil when off) and its invalidation state; otter is
	// the same store when it is the default one, called without an
	// interface on a local hit (local.go, localGet).
	local   LocalStore[V]
	otter   *otterStore[V]
	hot     HotKeys
	source  [sourceIDSize]byte
	channel string
	epoch   atomic.Uint64 // odd while the invalidation subscription is down
	// localFloor is the epoch of the last clear of the local tier (a
	// flush, or the subscription coming back). An entry of an older epoch
	// was stored around that Clear and is never served, not even stale
	// while Redis fails (get.go, unavailable). The subscriber (and a
	// generation move, clear.go) writes it, with the current epoch, which
	// only grows; it never goes down.
	localFloor atomic.Uint64
	coarseNow  atomic.Int64  // unix nanos, advanced every coarseTick (local.go)
	clockIdle  atomic.Bool   // the coarse clock is paused until the next local read
	clockUsed  atomic.Bool   // a local read happened since the last tick
	clockWake  chan struct{} // wakes a paused coarse clock
	invalSeq   atomic.Uint64 // bumped by every invalidation
	// replicaReads: the client may send reads to replicas (a cluster
	// client with ReadOnly, RouteByLatency or RouteRandomly). What a GET
	// or MGET returns may then lag the master, where invalidations are
	// published, and is not admitted to the local tier (decodeHit); what
	// a fill loaded, or found on the master, still is.
	replicaReads bool
	// admitLocks orders admissions against invalidations (local_order.go).
	admitLocks *admitLocks
	// subscribed is closed once the first subscription is confirmed.
	subscribed     chan struct{}
	subscribedOnce sync.Once
	// trustUntil (unix nanos) is how long the local tier may be served on the
	// strength of the last health reply (invalidate_subscribe.go).
	trustUntil atomic.Int64
	pub        publisher  // invalidate_publish.go
	inval      invalStats // invalidate.go
	track      *tracking  // WithTracking (tracking.go); nil without

	breaker       *gobreaker.TwoStepCircuitBreaker[struct{}] // nil when off
	gate          breakerGate                                // the breaker's lock-free fast path (breaker.go)
	fallbackSem   chan struct{}                              // nil when off
	loadSem       chan struct{}                              // WithMaxLoads; nil when off
	fallbackGroup singleflight.Group

	hooks *hooks // nil in production

	ttlFunc func(string, V) time.Duration // WithTTLFunc (ttlfunc.go); nil when off
	gen     atomic.Uint64                 // the generation of every key read and written (clear.go)

	// flights coalesces the Redis reads of one key (flight.go).
	flights flights[V]
	// reads batches the GETs of different keys per node (readbatch.go).
	reads readQueues
	// hub is the client's shared pub/sub connections (internal/pubsub);
	// invalSub is the invalidation channel's subscription on it (nil
	// without a local tier).
	hub      *pubsub.Hub
	invalSub *pubsub.Sub
	// syncRDB runs New's version probe and the generation sync, closed by
	// closeSync (generation.go).
	syncRDB   redis.UniversalClient
	closeSync func() error
	// fills wakes lease waiters when a fill lands (notify.go).
	fills fillListener

	// Tags (tags.go): the function of WithTags (nil: untagged) and the tag
	// times this instance knows.
	tagFn    func(key string, v V) []string
	tagTimes tagTable
}

// hooks are interleaving points for tests; nil in production.
type hooks struct {
	afterLoad      func(key string) // the loader returned, before the fill
	onLeaseWait    func(key string) // another holder's placeholder was seen
	onRefresh      func(key string) // an early refresh started
	now            func() time.Time // clock for expiry decisions
	rand           func() float64   // early-refresh dice
	onFill         func(key string, ok bool)
	onExtend       func(key string, ok bool, err error) // a lease extension ran (err: no answer, retrying)
	onSubscribed   func()                               // the invalidation subscription is (back) up
	onNotMaster    func()                               // the subscription's node answered ROLE with another role
	beforeRole     func()                               // the subscriber is about to ask its node's ROLE
	onInvalidate   func(keys []string)                  // another instance's invalidation was applied
	beforeLocalSet func(key string)                     // an admission passed its check, holding key's stripe lock
	onLoadWait     func()                               // a load waits for a slot under WithMaxLoads
	onJoin         func(key string)                     // a call joined another's read of key (flight.go)
	onTrack        func(keys []string)                  // a tracking invalidation was applied (nil: a flush)
	onTracking     func(up bool)                        // tracking came up on every master, or went down
	onGeneration   func(gen uint64)                     // the cache moved to a new generation (clear.go)

	// Fill notifications (notify.go).
	onWake       func(key string, notified bool) // a lease waiter woke: by a fill message, or to poll
	notifiedPoll time.Duration                   // replaces notifiedPoll when > 0
	noFillNotify bool                            // waiters poll only, as before fill messages
	onWaitMarked func(key string)                // a waiter marked key's placeholder

	readVia redis.Cmdable // sends the read engine's GETs in place of its read queues
	// batchReads adds a batch's queued GETs to pipe in a shape of its own;
	// replied puts the replies into them once pipe has run (an MGET,
	// measured in BenchmarkReadTransport).
	batchReads func(ctx context.Context, pipe redis.Pipeliner, gets []redis.Cmder) (replied func())
}

func (c *Cache[V]) isClosed() bool { return c.closed.Load() }

func (c *Cache[V]) check(ctx context.Context, key string) error {
	if key == "" || wire.ReservedKey(key) {
		return ErrInvalidKey
	}
	if c.isClosed() {
		return ErrClosed
	}
	return ctx.Err()
}

// callerErr returns ctx's own error in place of err once ctx has ended. With
// ContextTimeoutEnabled, go-redis reports a caller's deadline that ran out
// during a read as a network timeout; taken for a Redis failure, it would
// count against the breaker and start fallback loads while Redis is healthy.
//
// The socket deadline go-redis sets is the context's own deadline, and it can
// fire a moment before the context's timer marks the context done, so a
// deadline already reached counts too.
func callerErr(ctx context.Context, err error) error {
	if err != nil && !errors.Is(err, redis.Nil) {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return context.DeadlineExceeded
		}
	}
	return err
}

// redisError counts err and returns it wrapped in ErrRedis. A context error
// is returned as it is, so errors.Is(err, context.Canceled) keeps working.
func (c *Cache[V]) redisError(key, op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	c.stats.redisErrors.Add(1)
	c.reloadTopology(err)
	return fmt.Errorf("%w: %s %q: %w", ErrRedis, op, key, err)
}

// report hands an error that no caller will see to the logger, aggregated by
// kind (logagg.go), and to the error handler, which sees every one (as a
// *KeyError when it is about a key).
func (c *Cache[V]) report(kind logKind, key string, err error) {
	c.logs.report(kind, key, err)
	if c.cfg.onError != nil {
		if key != "" {
			err = &KeyError{Key: key, Err: err}
		}
		c.cfg.onError(err)
	}
}

// startLocal builds the local tier and starts the invalidation subscriber.
func (c *Cache[V]) startLocal() error {
	l := c.cfg.local
	store, err := newLocalStore[V](l)
	if err != nil {
		return err
	}
	c.local = store
	c.otter, _ = store.(*otterStore[V])
	c.admitLocks = new(admitLocks)
	c.epoch.Store(1) // down until the first subscription is confirmed
	c.coarseNow.Store(time.Now().UnixNano())
	if l.tracking {
		if err := c.startTracking(); err != nil {
			return err
		}
	}
	c.clockWake = make(chan struct{}, 1)
	c.goBackground(c.runCoarseClock)
	c.subscribe()
	return nil
}

// forget makes callers that arrive after a write start a fallback load of
// their own instead of joining one that began before it (and may have
// loaded the old row), and lets them read without waiting for a read sent
// before the write (flight.go; nobody joins a read already sent anyway).
func (c *Cache[V]) forget(keys []string) {
	for _, k := range keys {
		c.flights.forget(c.rkey(k))
		c.fallbackGroup.Forget(k)
	}
}
