package engine

import (
	"context"
	"fmt"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/flight"
	"github.com/cacheguard/cacheguard/cache/internal/local"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// What a read may skip or be refused: the Bloom filters (in front of
// Redis, and after a miss before the lease) answer "definitely absent", and
// a key rate limit (WithKeyRateLimit; with a hot-key detector, of hot keys
// only) admits each Redis read of Get and each load. A refused read or load
// is answered from the local tier's entry if there is one still within its
// stale bound (as in an outage), else with an error wrapping
// ErrRateLimited; nothing is sent on. GetMany's batch reads are not
// limited.

// absent consults f; it returns true only for a definite "absent". A filter
// error never fails a read: it is counted and reported, and the read goes
// on as if there were no filter.
func (c *Engine[V]) absent(ctx context.Context, f Filter, key string) bool {
	if f == nil {
		return false
	}
	ok, err := f.MayContain(ctx, key)
	if err != nil {
		c.Rec.FilterErrors.Add(1)
		c.Rec.Report(telemetry.FilterFailed, key, err)
		return false
	}
	if !ok {
		c.Rec.FilterRejects.Add(1)
	}
	return !ok
}

// limit asks the limiter whether a read (load false) or a load of key may
// go ahead, and returns an error wrapping ErrRateLimited if not.
func (c *Engine[V]) limit(ctx context.Context, load bool, key string) error {
	l := c.cfg.Limiter
	if l == nil || (c.Hot != nil && !c.Hot.IsHot(key)) {
		return nil
	}
	ok, err := l(ctx, load, key)
	if err != nil {
		c.Rec.Report(telemetry.RateLimiter, key, kind.Errorf("cacheguard: cache: rate limiter: %w", err))
	}
	if ok {
		return nil
	}
	c.Rec.RateLimited.Add(1)
	op := "read"
	if load {
		op = "load"
	}
	return fmt.Errorf("%w: %s of %q", errs.ErrRateLimited, op, key)
}

// limitRead is limit for a Redis read, as read's answer: a refusal is an
// answer with its error, which Get turns into rateLimited's.
func (c *Engine[V]) limitRead(ctx context.Context, key string) (flight.Result[V], bool) {
	if err := c.limit(ctx, false, key); err != nil {
		return flight.Result[V]{Err: err}, true
	}
	return flight.Result[V]{}, false
}

// rateLimited answers a Get whose read or load was refused: with the local
// tier's entry past its freshness if an outage could serve it, else with err.
func (c *Engine[V]) rateLimited(e *local.Entry[V], err error) (V, error) {
	var zero V
	if !c.Tier.ServableStale(e) {
		return zero, err
	}
	c.Rec.RateLimitedLocal.Add(1)
	if e.Null {
		return zero, errs.ErrNotFound
	}
	return e.Value, nil
}

// limitLoads asks the limiter for a load of each pending key before the
// engine takes a lease for it: a refused key ends in b with its error (no
// lease left under it, no loader called); the admitted keys are returned.
func (c *Engine[V]) limitLoads(ctx context.Context, pending []string, b *batch[V]) []string {
	if c.cfg.Limiter == nil {
		return pending
	}
	admitted := pending[:0:0]
	for _, k := range pending {
		if err := c.limit(ctx, true, k); err != nil {
			b.fail(k, err)
			continue
		}
		admitted = append(admitted, k)
	}
	return admitted
}
