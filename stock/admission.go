package stock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/members"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// ErrSoldOut is returned by Admission.Allow when this process already knows
// the SKU is sold out or its sale ended (see WithLocalSoldOut): the request
// is answered without any Redis call.
var ErrSoldOut = errors.New("cacheguard: stock: sold out")

// Rate is a request budget: Count requests per Per, with bursts of Burst
// (Count if 0). A zero Rate means no limit.
type Rate struct {
	Count int
	Per   time.Duration
	Burst int
}

func (r Rate) zero() bool { return r.Count == 0 }

func (r Rate) valid() bool { return r.Count >= 0 && r.Burst >= 0 && (r.zero() || r.Per > 0) }

func (r Rate) redis() redis_rate.Limit {
	b := r.Burst
	if b == 0 {
		b = r.Count
	}
	return redis_rate.Limit{Rate: r.Count, Period: r.Per, Burst: b}
}

// local is the per-process share of r over instances processes, taken
// over because Redis failed: its share of the burst (at least one request,
// so that a budget of one a day per user still admits one) and of the
// rate. While the others still reach Redis they spend the shared budget
// until they count this process out (internal/members), so a partition
// admits at most b/n + r·D/n more than the budget, D the time they take.
func (r Rate) local(instances int) *rate.Limiter {
	per := float64(r.Count) / float64(instances) / r.Per.Seconds()
	b := r.Burst
	if b == 0 {
		b = r.Count
	}
	return rate.NewLimiter(rate.Limit(per), max(1, b/instances))
}

// Admission throttles requests before they reach Reserve: a GCRA limiter in
// Redis (go-redis/redis_rate) per SKU and per user, shared by every process.
// When Redis cannot answer, each process falls back to an in-process token
// bucket holding its share (1/instances) of the same budgets, so an outage
// narrows the gate instead of opening it. With more than one instance the
// processes count each other in Redis (internal/members, as ratelimit
// does) and shrink the shared budgets to the live ones' shares, so one
// process cut off from Redis spends its share without the others spending
// it too: the fleet admits at most b + r·t + b/n + r·D/n (D up to a second,
// the time they take to count it out; measured with three processes sharing
// 50 + 50/s over 3 s: 199 healthy, 187 with one cut off, 257 before the
// count, TestAdmissionHoldsWhenOneProcessIsCutOff). It is safe for
// concurrent use.
type Admission struct {
	lim       *redis_rate.Limiter
	fleet     *members.Fleet // the live processes (nil: one)
	calls     call.Bound
	ns        string
	sku, user Rate
	instances int
	inv       *Inventory
	report    option.Reporter

	mu        sync.Mutex
	localSKU  map[string]*rate.Limiter
	localUser map[string]*rate.Limiter

	fallbacks atomic.Int64
	limited   atomic.Int64
	outage    atomic.Bool
}

// NewAdmission returns an Admission on rdb, configured by WithSKURate,
// WithUserRate, WithInstances, WithInventory, WithPrefix and WithLogger.
// Without a rate it admits every request.
func NewAdmission(rdb redis.UniversalClient, opts ...Option) (*Admission, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidArgument)
	}
	o, err := apply(admissionPart, opts)
	if err != nil {
		return nil, err
	}
	cfg := o.adm
	a := &Admission{
		lim: redis_rate.NewLimiter(rdb), calls: call.For(rdb).RedisAs(ErrRedis), ns: cfg.ns, sku: cfg.perSKU, user: cfg.perUser,
		instances: cfg.instances, inv: cfg.inv, report: o.report,
		localSKU: map[string]*rate.Limiter{}, localUser: map[string]*rate.Limiter{},
	}
	if cfg.instances > 1 {
		a.fleet = members.New(rdb, wire.MembersKey(cfg.ns+"rate:"), cfg.instances)
	}
	return a, nil
}

// AdmissionStats are counters since NewAdmission.
type AdmissionStats struct {
	Limited   int64 // requests refused with ErrRateLimited
	Fallbacks int64 // decisions taken by the local limiter because Redis failed
}

// Stats returns the counters.
func (a *Admission) Stats() AdmissionStats {
	return AdmissionStats{Limited: a.limited.Load(), Fallbacks: a.fallbacks.Load()}
}

// Allow admits one request of user for sku, or returns an error wrapping
// ErrRateLimited or ErrSoldOut. It never returns a Redis error: when Redis
// fails the local limiter decides.
func (a *Admission) Allow(ctx context.Context, sku, user string) error {
	if err := checkSKU(sku); err != nil {
		return err
	}
	if err := checkID(user, ErrInvalidArgument, "user"); err != nil {
		return err
	}
	if a.inv != nil && a.inv.SoldOutLocally(sku) {
		return fmt.Errorf("%w: %s", ErrSoldOut, sku)
	}
	perSKU, perUser := wire.StockRateKeys(a.ns, sku, user)
	// The user first: a flood from one user does not eat the SKU's budget.
	if !a.user.zero() {
		if err := a.allow(ctx, perUser, a.user, a.localUser, sku+"\x00"+user); err != nil {
			return err
		}
	}
	if !a.sku.zero() {
		return a.allow(ctx, perSKU, a.sku, a.localSKU, sku)
	}
	return nil
}

// allow decides by the shared budget of key, shrunk to the shares of the
// live processes (internal/members): a process cut off from Redis spends its
// share locally, and the others leave room for it once they have counted it
// out.
func (a *Admission) allow(ctx context.Context, key string, r Rate, local map[string]*rate.Limiter, lkey string) error {
	res, err := do(a.calls, ctx, func(ctx context.Context) (*redis_rate.Result, error) {
		lim := r.redis()
		if a.fleet != nil {
			// A failed beat keeps the last count; the call below meets
			// the same failure and reports it.
			live, _ := a.fleet.Live(ctx)
			lim.Period, lim.Burst = members.Share(lim.Period, lim.Burst, live, a.instances)
		}
		return a.lim.Allow(ctx, key, lim)
	})
	if err == nil {
		if a.outage.Swap(false) {
			a.report.Logger.Info("cacheguard: stock: admission: Redis answers again; shared limits back")
			a.mu.Lock()
			clear(a.localSKU) // refilled meanwhile: the next outage starts them afresh
			clear(a.localUser)
			a.mu.Unlock()
		}
		if res.Allowed > 0 {
			return nil
		}
		a.limited.Add(1)
		return fmt.Errorf("%w: %s (retry after %v)", ErrRateLimited, key, res.RetryAfter)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	a.fallbacks.Add(1)
	if !a.outage.Swap(true) {
		a.report.Warn("cacheguard: stock: admission: Redis failed; local limits in force", err)
	}
	a.mu.Lock()
	l := local[lkey]
	if l == nil {
		if len(local) >= 100_000 {
			clear(local) // bounded memory; a cleared user starts a fresh bucket
		}
		l = r.local(a.instances)
		local[lkey] = l
	}
	a.mu.Unlock()
	if l.Allow() {
		return nil
	}
	a.limited.Add(1)
	return fmt.Errorf("%w: %s (local limit during a Redis outage)", ErrRateLimited, key)
}

// SoldOutLocally reports whether this process remembers sku as sold out or
// ended (WithLocalSoldOut), so that a caller can answer without Redis.
func (inv *Inventory) SoldOutLocally(sku string) bool {
	until, ok := inv.soldOut.Load(sku)
	return ok && time.Now().Before(until.(time.Time))
}
