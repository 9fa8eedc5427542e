package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Limiter is a cache.KeyLimiter shared by every instance through Redis, with
// a local fallback (see the package documentation). It is safe for
// concurrent use.
type Limiter struct {
	cfg    config
	gcra   *redis_rate.Limiter // nil: local budgets only
	share  int                 // each instance's share of a budget while local: 1/share
	downTo atomic.Int64        // unix nanos: until then the local buckets decide alone

	mu    sync.Mutex
	local map[localKey]*rate.Limiter

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
	for _, o := range opts {
		if o == nil {
			cfg.fail("nil option")
			continue
		}
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	l := &Limiter{cfg: cfg, share: 1, local: map[localKey]*rate.Limiter{}}
	if rdb != nil {
		l.gcra = redis_rate.NewLimiter(rdb)
		l.share = cfg.instances
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

// Allow admits one op on key or refuses it. The error, if any, wraps ErrStore
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
	if l.gcra != nil && time.Now().UnixNano() >= l.downTo.Load() {
		ok, err := l.allowShared(ctx, op, key, lim)
		if err == nil {
			return l.count(ok), nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		l.storeErrors.Add(1)
		l.downTo.Store(time.Now().Add(l.cfg.retryAfter).UnixNano())
		storeErr = fmt.Errorf("%w: %s of %q: %w", ErrStore, op, key, err)
	}
	if l.gcra != nil {
		l.localDecisions.Add(1)
	}
	return l.count(l.allowLocal(op, key, lim)), storeErr
}

func (l *Limiter) allowShared(ctx context.Context, op cache.LimitOp, key string, lim Limit) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.timeout)
	defer cancel()
	res, err := l.gcra.Allow(ctx, wire.RateLimitKey(l.cfg.prefix, op.String(), key), lim.shared())
	if err != nil {
		return false, err
	}
	return res.Allowed > 0, nil
}

func (l *Limiter) allowLocal(op cache.LimitOp, key string, lim Limit) bool {
	k := localKey{op, key}
	l.mu.Lock()
	b := l.local[k]
	if b == nil {
		if len(l.local) >= l.cfg.maxKeys {
			clear(l.local) // bounded memory: dropped buckets start full
		}
		b = lim.share(l.share)
		l.local[k] = b
	}
	l.mu.Unlock()
	return b.Allow()
}

func (l *Limiter) count(ok bool) bool {
	if ok {
		l.allowed.Add(1)
	} else {
		l.limited.Add(1)
	}
	return ok
}
