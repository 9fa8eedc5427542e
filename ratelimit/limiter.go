package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/members"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Limiter is a cache.KeyLimiter shared by every instance through Redis, with
// a local fallback (see the package documentation). It is safe for
// concurrent use.
type Limiter struct {
	cfg    config
	gcra   *redis_rate.Limiter // nil: local budgets only
	fleet  *members.Fleet      // the live instances (nil: one instance, or none shared)
	share  int                 // each instance's share of a budget while local: 1/share
	downTo atomic.Int64        // unix nanos: until then the local buckets decide alone
	outage atomic.Uint64       // outages so far: a bucket last used in an older one is cut to its start
	down   atomic.Bool         // the last Redis call failed: an outage is under way

	mu    sync.Mutex
	local map[localKey]*bucket

	allowed, limited, storeErrors, localDecisions atomic.Uint64
}

type localKey struct {
	op  cache.LimitOp
	key string
}

var _ cache.KeyLimiter = (*Limiter)(nil)

// New returns a Limiter whose budgets are shared through rdb, or, with a nil
// rdb, held by this instance alone.
func New(rdb redis.UniversalClient, opts ...Option) (*Limiter, error) {
	cfg := defaultConfig()
	option.Apply(&cfg, opts)
	if err := cfg.errs.Err(); err != nil {
		return nil, err
	}
	l := &Limiter{cfg: cfg, share: 1, local: map[localKey]*bucket{}}
	if rdb != nil {
		l.gcra = redis_rate.NewLimiter(rdb)
		l.share = cfg.instances
		if cfg.instances > 1 {
			l.fleet = members.New(rdb, wire.MembersKey(cfg.prefix), cfg.instances)
		}
	}
	return l, nil
}

// Stats are a Limiter's counters since New.
type Stats struct {
	Allowed        uint64 // operations admitted
	Limited        uint64 // operations refused
	StoreErrors    uint64 // Redis calls that failed (each returned with its decision)
	LocalDecisions uint64 // decisions taken by the local shares because Redis failed
}

// Stats returns the counters.
func (l *Limiter) Stats() Stats {
	return Stats{Allowed: l.allowed.Load(), Limited: l.limited.Load(),
		StoreErrors: l.storeErrors.Load(), LocalDecisions: l.localDecisions.Load()}
}

// Allow admits one op on key or refuses it. The error, if any, wraps ErrRedis
// and the Redis error: the decision was the local share's.
func (l *Limiter) Allow(ctx context.Context, op cache.LimitOp, key string) (bool, error) {
	lim := l.cfg.loads
	if op == cache.LimitRead {
		lim = l.cfg.reads
	}
	if lim.zero() {
		return true, nil
	}
	var storeErr error
	if l.gcra != nil && l.cfg.now().UnixNano() >= l.downTo.Load() {
		ok, err := l.allowShared(ctx, op, key, lim)
		if err == nil {
			if l.down.Load() { // the outage is over
				l.down.Store(false)
			}
			return l.count(ok), nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		l.storeErrors.Add(1)
		if !l.down.Swap(true) {
			l.outage.Add(1) // Redis answered before this failure: a new outage
		}
		l.downTo.Store(l.cfg.now().Add(l.cfg.retryAfter).UnixNano())
		storeErr = kind.Wrap(ErrRedis, fmt.Sprintf("%s of %q (local share applied)", op, key), err)
	}
	if l.gcra != nil {
		l.localDecisions.Add(1)
	}
	return l.count(l.allowLocal(op, key, lim)), storeErr
}

// allowShared decides by the shared budget, shrunk to the shares of the
// live instances (internal/members): an instance cut off from Redis spends
// its share locally, and the others leave room for it once they have
// counted it out.
func (l *Limiter) allowShared(ctx context.Context, op cache.LimitOp, key string, lim Limit) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.timeout)
	defer cancel()
	shared := lim.shared()
	if l.fleet != nil {
		// A failed beat keeps the last count; the call below meets the
		// same failure and reports it.
		live, _ := l.fleet.Live(ctx)
		shared.Period, shared.Burst = members.Share(shared.Period, shared.Burst, live, l.share)
	}
	res, err := l.gcra.Allow(ctx, wire.RateLimitKey(l.cfg.prefix, op.String(), key), shared)
	if err != nil {
		return false, err
	}
	return res.Allowed > 0, nil
}

// allowLocal decides by key's local bucket. A bucket last used before the
// outage under way is cut to at most its start: between outages it fills up
// to its capacity, which may be a whole token where the share is a tenth,
// and twenty instances starting an outage with a token each would open the
// gate the share narrows.
func (l *Limiter) allowLocal(op cache.LimitOp, key string, lim Limit) bool {
	k := localKey{op, key}
	now, outage := l.cfg.now(), l.outage.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.local[k]
	if b == nil {
		if len(l.local) >= l.cfg.maxKeys {
			clear(l.local) // bounded memory: dropped buckets start again
		}
		b = lim.share(l.share, now, l.gcra == nil)
		l.local[k] = b
	} else if b.outage != outage {
		b.fill(now)
		b.tokens = min(b.tokens, b.start)
	}
	b.outage = outage
	return b.allow(now)
}

func (l *Limiter) count(ok bool) bool {
	if ok {
		l.allowed.Add(1)
	} else {
		l.limited.Add(1)
	}
	return ok
}
