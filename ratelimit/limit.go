package ratelimit

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"golang.org/x/time/rate"
)

// ErrInvalidOption is returned by New, wrapped with the reason, for an option
// out of range.
var ErrInvalidOption = errors.New("cacheguard: ratelimit: invalid option")

// ErrStore wraps the error of a Redis call that failed; the decision that
// came with it was taken by the local fallback.
var ErrStore = errors.New("cacheguard: ratelimit: shared limit unavailable, local share applied")

// Limit is a budget of Rate operations per Per, with bursts of up to Burst
// (Rate when 0). The zero Limit means no limit.
type Limit struct {
	Rate  int
	Per   time.Duration
	Burst int
}

// PerSecond returns a Limit of n a second, with bursts of n.
func PerSecond(n int) Limit { return Limit{Rate: n, Per: time.Second} }

func (l Limit) zero() bool { return l.Rate == 0 }

func (l Limit) check(what string) error {
	if l.Rate < 0 || l.Burst < 0 || (!l.zero() && l.Per <= 0) {
		return fmt.Errorf("%w: %s limit %+v", ErrInvalidOption, what, l)
	}
	return nil
}

func (l Limit) burst() int {
	if l.Burst == 0 {
		return l.Rate
	}
	return l.Burst
}

// shared is l for the GCRA limiter in Redis.
func (l Limit) shared() redis_rate.Limit {
	return redis_rate.Limit{Rate: l.Rate, Period: l.Per, Burst: l.burst()}
}

// share returns a token bucket holding 1/n of l (at least one token of burst).
func (l Limit) share(n int) *rate.Limiter {
	per := float64(l.Rate) / float64(n) / l.Per.Seconds()
	return rate.NewLimiter(rate.Limit(per), max(1, l.burst()/n))
}
