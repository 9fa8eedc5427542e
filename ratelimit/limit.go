package ratelimit

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/go-redis/redis_rate/v10"
)

// ErrInvalidOption is returned by New, wrapped with the reason, for an option
// out of range.
var ErrInvalidOption = kind.InvalidOption("ratelimit")

// ErrRedis wraps the error of a Redis call that failed; the decision that
// came with it was taken by the local fallback (the instance's share).
var ErrRedis = kind.Redis("ratelimit")

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

// share returns the local bucket of an instance holding 1/n of l (see
// bucket). An instance without Redis (full) starts with its whole burst. A
// share taken over because Redis failed starts with nothing and gains its
// share of the rate: the failure may be this instance's alone, and the
// others spend the shared budget, burst included, until they count it out
// (internal/members); in an outage of the whole fleet the n buckets admit
// at most r·t in the t after they start, under the shared limiter's b + r·t.
// A share under one token starts lower by a random fraction of a token, so
// that the fleet's buckets reach their whole tokens at moments spread over
// the time a bucket takes to gain one, rather than all at once.
func (l Limit) share(n int, now time.Time, full bool) *bucket {
	start := 0.0
	if full {
		start = float64(l.burst()) / float64(n)
	} else if float64(l.burst())/float64(n) < 1 {
		start -= rand.Float64()
	}
	return &bucket{
		tokens:   start,
		start:    start,
		capacity: max(1, float64(l.burst())/float64(n)),
		rate:     float64(l.Rate) / float64(n) / l.Per.Seconds(),
		at:       now,
	}
}

// bucket is a token bucket of fractional tokens: it gains rate tokens a
// second up to capacity, and admits an operation when it holds a whole
// token. Its capacity is its share of the burst, or one token when the share
// is less (it could never admit otherwise).
type bucket struct {
	tokens, start, capacity, rate float64
	at                            time.Time // when tokens was last brought up to date
	outage                        uint64    // the limiter's outage in which it last decided
}

// fill brings the bucket's tokens up to now.
func (b *bucket) fill(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(b.capacity, b.tokens+d.Seconds()*b.rate)
		b.at = now
	}
}

// allow admits one operation at now, or refuses it.
func (b *bucket) allow(now time.Time) bool {
	b.fill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
