package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiting for another holder's fill is woken by the fill's notification
// (notify.go). Where notifications do not work it polls with exponential
// backoff between these bounds (jittered), retrying SET NX GET each time so
// that the lease of a holder that died is taken over as soon as it expires.
const (
	minBackoff = 2 * time.Millisecond
	maxBackoff = 50 * time.Millisecond
)

// result is what a shared fill hands to every caller waiting on it.
type result[V any] struct {
	v    V
	null bool
	size int // encoded size, the local tier's cost
	// noLocal keeps the result out of the local tier: its fill was refused
	// (a write raced it), or the entry is stale or being refreshed.
	noLocal bool
}

// Get returns the value for key, loading it with load on a miss.
//
// The read path: the Bloom filter (if any) may answer "absent" at once; then
// one GET. On a miss, callers in this process share one fill
// (singleflight), and the fill takes a Redis lease so that callers in other
// processes wait for it instead of loading too. A missing row (load returns
// ErrNotFound) is cached as an absence for the null TTL and reported as
// ErrNotFound. A loader error is returned to every caller sharing the fill,
// and nothing is cached.
//
// Get returns ErrWaitTimeout when another process holds the lease longer than
// the wait budget, and an error wrapping ErrRedis when Redis fails: the
// database is not queried in either case (see WithLoadOnWaitTimeout).
func (c *Cache[V]) Get(ctx context.Context, key string, load Loader[V]) (V, error) {
	if c.cfg.observer != nil {
		return c.observeGet(ctx, key, load)
	}
	// A local hit returns from here, through small functions only: through
	// the larger read path it measured 25 % slower (a bigger frame to set
	// up, and the value copied once more on the way out).
	e, at := c.front(ctx, key, load)
	switch {
	case at == frontMiss:
		return c.remote(ctx, key, load, e)
	case at == frontInvalid:
		return c.get(ctx, key, load) // which reports why
	case e.Null:
		var zero V
		return zero, ErrNotFound
	}
	return e.Value, nil
}

// get is Get without the observer (observeGet wraps it).
func (c *Cache[V]) get(ctx context.Context, key string, load Loader[V]) (V, error) {
	var zero V
	if load == nil {
		return zero, ErrNilLoader
	}
	if err := c.check(ctx, key); err != nil {
		return zero, err
	}
	e, at := c.front(ctx, key, load)
	if at != frontHit {
		// frontInvalid cannot happen: the same checks passed just above,
		// and a Close since then is found by the read path.
		return c.remote(ctx, key, load, e)
	}
	c.observed(ctx, TierLocal)
	if e.Null {
		return zero, ErrNotFound
	}
	return e.Value, nil
}

// Where front found a Get.
const (
	frontInvalid = iota // a bad argument, a closed cache or an ended context
	frontMiss           // not (freshly) in the local tier
	frontHit            // a local hit, counted
)

// front starts every Get: the argument checks, the hot-key count and the
// local tier. After a miss, e is the local entry past its freshness, if
// any, which an outage may still serve. It records nothing when the checks
// fail, so that get can run them again to say why.
func (c *Cache[V]) front(ctx context.Context, key string, load Loader[V]) (e *LocalEntry[V], at int) {
	if load == nil || c.check(ctx, key) != nil {
		return nil, frontInvalid
	}
	if c.hot != nil {
		c.hot.Record(key)
	}
	if c.local == nil {
		return nil, frontMiss
	}
	fresh, e := c.localGet(key)
	if !fresh {
		return e, frontMiss
	}
	c.stats.localHits.Add(1) // Stats adds these to Hits
	return e, frontHit
}

// remote is the rest of a Get that the local tier did not answer: the
// Bloom filter, then Redis, shared with concurrent callers of the same key;
// stale is the local entry past its freshness, if any.
func (c *Cache[V]) remote(ctx context.Context, key string, load Loader[V], stale *LocalEntry[V]) (V, error) {
	var zero V
	if c.absent(ctx, c.cfg.filter, key) {
		return zero, ErrNotFound
	}
	rkey := c.cfg.prefix + key
	f, lead, res, clock, answered := c.solo(ctx, key, rkey, load)
	if answered {
		return c.answer(ctx, key, load, stale, res, clock)
	}
	for ; ; f = nil {
		if f == nil {
			if f, lead = c.flights.join(rkey); lead {
				c.lead(ctx, f, key, rkey, load)
			}
		}
		if !lead {
			f.joined.Add(1)
			if c.hooks.onJoin != nil {
				c.hooks.onJoin(key)
			}
		}
		res, err := f.wait(ctx)
		if err != nil {
			return zero, err
		}
		if res.gone {
			if lead && res.err != nil {
				return zero, res.err // our own context ended during the read
			}
			if err := ctx.Err(); err != nil {
				return zero, err
			}
			continue // the read we joined was abandoned: join or start another
		}
		if !lead {
			c.countJoined(ctx, res)
		} else if res.tier == TierFill && f.joined.Load() > 0 {
			c.observedShared(ctx)
		}
		return c.answer(ctx, key, load, stale, res, f.clock)
	}
}

// answer turns what a read found into Get's answer, admitting it to the
// local tier if nothing invalidated it since clock.
func (c *Cache[V]) answer(ctx context.Context, key string, load Loader[V], stale *LocalEntry[V], res flightResult[V], clock localClock) (V, error) {
	var zero V
	if res.gone {
		return zero, res.err // our own context ended during the read
	}
	if res.err != nil {
		return c.unavailable(ctx, key, load, stale, res.err)
	}
	c.admit(key, res.r, res.r.size, clock)
	if res.r.null {
		return zero, ErrNotFound
	}
	return res.r.v, nil
}

// solo reads rkey without a flight when nobody else is reading it (see
// flight.go). answered: res is the answer, read after clock. Otherwise the
// read became a flight: f is the one to wait on (lead: this caller started
// its fill), or nil when there was no solo read or it must start over.
func (c *Cache[V]) solo(ctx context.Context, key, rkey string, load Loader[V]) (f *flight[V], lead bool, res flightResult[V], clock localClock, answered bool) {
	sh, clock, ok := c.flights.startSolo(rkey, c.localClock)
	if !ok {
		return nil, false, res, clock, false
	}
	ended := false
	defer func() {
		if !ended { // a panic on the way: release whoever joined, re-raise
			if f := sh.endSolo(rkey, false); f != nil {
				c.flights.finish(rkey, f, flightResult[V]{gone: true})
			}
		}
	}()
	res, env, miss := c.read(ctx, key, rkey)
	f = sh.endSolo(rkey, miss)
	ended = true
	if !miss {
		if f != nil { // a flight queued behind this read: it may go now
			c.flights.finish(rkey, f, res)
		}
		c.refreshAfterHit(ctx, key, rkey, res, env, load)
		return nil, false, res, clock, true
	}
	c.leadMiss(ctx, f, key, rkey, load)
	return f, true, res, clock, false
}

// lead runs the read of flight f: it waits for the key's read under way
// here, if any, then one GET, and on a miss the fill (which ends the flight
// when it is done). Whatever happens, f ends.
func (c *Cache[V]) lead(ctx context.Context, f *flight[V], key, rkey string, load Loader[V]) {
	ended := false
	defer func() {
		if !ended { // a panic on the way: release the callers, re-raise
			c.flights.finish(rkey, f, flightResult[V]{gone: true})
		}
	}()
	if f.prev != nil && c.hooks.onJoin != nil {
		c.hooks.onJoin(key) // queued behind the read under way
	}
	if err := f.send(ctx, c.localClock); err != nil {
		ended = true
		c.flights.finish(rkey, f, flightResult[V]{gone: true, err: err})
		return
	}
	res, env, miss := c.read(ctx, key, rkey)
	ended = true
	if !miss {
		c.flights.finish(rkey, f, res)
		c.refreshAfterHit(ctx, key, rkey, res, env, load)
		return
	}
	c.leadMiss(ctx, f, key, rkey, load)
}

// refreshAfterHit starts an early refresh of a value just read from Redis,
// if it is due (after the read's callers have their answer).
func (c *Cache[V]) refreshAfterHit(ctx context.Context, key, rkey string, res flightResult[V], env envelope, load Loader[V]) {
	if res.tier == TierRedis && !res.r.null {
		c.maybeRefresh(ctx, key, rkey, env, load)
	}
}

// read is the GET of a read: the breaker, the command and the decoding. On
// a miss nothing usable is cached and a fill comes next; otherwise res is the
// answer: a hit, an error, or gone with the error if ctx ended.
func (c *Cache[V]) read(ctx context.Context, key, rkey string) (res flightResult[V], env envelope, miss bool) {
	done, err := c.allow(key)
	if err != nil {
		return flightResult[V]{err: err}, env, false
	}
	raw, err := c.rdb.Get(ctx, rkey).Bytes()
	err = callerErr(ctx, err)
	done(err)
	if isWrongType(err) { // another Redis type: foreign data, a miss
		c.stats.corrupt.Add(1)
		err = redis.Nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		if isCtxErr(err) {
			return flightResult[V]{gone: true, err: err}, env, false
		}
		return flightResult[V]{err: c.redisError(key, "get", err)}, env, false
	}
	if err == nil {
		if r, env, ok := c.decodeHit(key, raw); ok {
			c.observed(ctx, TierRedis)
			return flightResult[V]{r: r, tier: TierRedis}, env, false
		}
	}
	return res, env, true
}

// leadMiss runs the rest of flight f's read after a miss: the fill, which
// ends f when it is done. Whatever happens, f ends.
func (c *Cache[V]) leadMiss(ctx context.Context, f *flight[V], key, rkey string, load Loader[V]) {
	filling := false
	defer func() {
		if !filling { // a panic of the filter's: release the callers, re-raise
			c.flights.finish(rkey, f, flightResult[V]{gone: true})
		}
	}()
	c.stats.misses.Add(1)
	c.observed(ctx, TierFill)
	absent := c.absent(ctx, c.cfg.missFilter, key)
	filling = true
	if absent {
		c.flights.finish(rkey, f, flightResult[V]{r: result[V]{null: true, noLocal: true}, tier: TierFill})
		return
	}
	c.sharedFill(ctx, f, key, rkey, load) // which ends the flight
}

// countJoined counts, for a caller that joined another's flight, what the
// leader counted for itself, so that Stats add up to one per call.
func (c *Cache[V]) countJoined(ctx context.Context, res flightResult[V]) {
	if res.err != nil {
		return
	}
	c.observed(ctx, res.tier)
	switch {
	case res.tier == TierFill:
		c.stats.misses.Add(1)
		c.observedShared(ctx)
	case res.r.null:
		c.stats.nullHits.Add(1)
	default:
		c.stats.hits.Add(1)
	}
}

// unavailable answers a Get when Redis failed: with the local tier's expired
// entry if it is within the stale bound (hot keys keep being served from
// memory rather than hitting the database) and was admitted since the tier
// was last cleared, else with a capped fallback load if configured, else
// with err.
func (c *Cache[V]) unavailable(ctx context.Context, key string, load Loader[V], e *LocalEntry[V], err error) (V, error) {
	var zero V
	if !errors.Is(err, ErrRedis) {
		return zero, err // the caller's context ended: nothing failed
	}
	if e == nil || c.coarseNow.Load() >= e.stale || e.epoch < c.localFloor.Load() {
		return c.fallbackLoad(ctx, key, load, err)
	}
	c.stats.staleServed.Add(1)
	c.report(logStaleServed, key, fmt.Errorf("cacheguard: served a stale local entry: %w", err))
	if e.Null {
		return zero, ErrNotFound
	}
	return e.Value, nil
}

// decodeHit turns the bytes of a GET into a result, counting it; ok is false
// for a lease placeholder or bytes that are not a decodable envelope (a miss).
func (c *Cache[V]) decodeHit(key string, raw []byte) (result[V], envelope, bool) {
	if classify(raw) == kindLease || isVersionTombstone(raw) {
		return result[V]{}, envelope{}, false // a miss, not corrupt data
	}
	r, env, ok := c.decodeEntry(key, raw)
	if c.replicaReads {
		// Possibly read from a replica that has not caught up with a
		// write whose invalidation already arrived: an admission's clock
		// check cannot see that, and the tier would keep the old value
		// for its whole TTL after the replica caught up.
		r.noLocal = true
	}
	switch {
	case !ok:
		c.stats.corrupt.Add(1)
	case r.null:
		c.stats.nullHits.Add(1)
	default:
		c.stats.hits.Add(1)
	}
	return r, env, ok
}

// decodeEntry decodes an envelope read from key; ok is false for anything
// else, or for a payload the codec cannot decode (reported).
func (c *Cache[V]) decodeEntry(key string, raw []byte) (result[V], envelope, bool) {
	env, ok := decodeEnvelope(raw)
	if !ok {
		return result[V]{}, env, false
	}
	c.observedSize("read", len(raw))
	r := result[V]{null: env.null(), size: len(raw), noLocal: env.flags&(flagStale|flagRefreshing) != 0}
	if !r.null {
		v, err := c.decodePayload(env)
		if err != nil {
			c.report(logUndecodable, key, fmt.Errorf("cacheguard: decode %q: %w", key, err))
			return result[V]{}, env, false
		}
		r.v = v
	}
	return r, env, true
}

// sharedFill runs the fill of flight f, detached from any one caller's
// context (keeping its values) so that the first caller giving up does not
// fail the others, and ends f with its result; Close cancels it. Flights of
// one key run one after another, so a key has one fill under way here.
func (c *Cache[V]) sharedFill(ctx context.Context, f *flight[V], key, rkey string, load Loader[V]) {
	detached := context.WithoutCancel(ctx)
	started := c.goBackground(func() {
		var r result[V]
		var err error
		func() {
			// A panic here (a codec's, say) would be raised on a
			// goroutine nobody can recover on.
			defer func() {
				if p := recover(); p != nil {
					r, err = result[V]{}, fmt.Errorf("cacheguard: fill of %q panicked: %v", key, p)
				}
			}()
			fctx, cancel := context.WithCancel(detached)
			defer cancel()
			stop := context.AfterFunc(c.closing, cancel)
			defer stop()
			r, err = c.fill(fctx, key, rkey, load)
		}()
		c.flights.finish(rkey, f, flightResult[V]{r: r, tier: TierFill, err: err})
	})
	if !started {
		c.flights.finish(rkey, f, flightResult[V]{err: ErrClosed})
	}
}

// fill is the fill of one key: the per-key state machine of fillMany
// (lease, wait, load, fill, heal; a refused fill read again) for a batch of
// one, so that Get and GetMany follow one set of rules.
func (c *Cache[V]) fill(ctx context.Context, key, rkey string, load Loader[V]) (result[V], error) {
	b := &batch[V]{res: make(map[string]flightResult[V], 1), errs: map[string]error{}}
	err := c.fillMany(ctx, []string{key}, batchOf(load), b)
	if res, ok := b.res[key]; ok {
		return res.r, nil
	}
	if kerr, ok := b.errs[key]; ok {
		return result[V]{}, kerr
	}
	if err == nil {
		err = fmt.Errorf("cacheguard: %q left undecided", key)
	}
	return result[V]{}, err
}

// batchOf loads a batch of one key through a loader.
func batchOf[V any](load Loader[V]) BatchLoader[V] {
	return func(ctx context.Context, keys []string) (map[string]V, error) {
		v, err := load(ctx, keys[0])
		if err != nil {
			return nil, err // ErrNotFound: the key is missing
		}
		return map[string]V{keys[0]: v}, nil
	}
}

// callLoader runs load through runLoad.
func (c *Cache[V]) callLoader(ctx context.Context, key string, load Loader[V]) (v V, err error) {
	err = c.runLoad(ctx, fmt.Sprintf("loader for %q", key), func(ctx context.Context) (err error) {
		v, err = load(ctx, key)
		return err
	})
	return v, err
}

// runLoad runs one loader call: under the load timeout and the WithMaxLoads
// cap, counted, and with a panic turned into an error, since loads run on
// goroutines no caller could recover on.
func (c *Cache[V]) runLoad(ctx context.Context, what string, call func(context.Context) error) (err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.loadTimeout)
	defer cancel()
	release, err := c.loadSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	c.stats.loads.Add(1)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cacheguard: %s panicked: %v", what, p)
		}
	}()
	return call(ctx)
}
