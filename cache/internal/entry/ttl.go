package entry

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
)

// Jittered spreads ttl uniformly over [ttl·(1−f), ttl·(1+f)], so that keys
// filled in the same instant do not all expire in the same instant; a
// positive ttl stays positive. What it returns goes to Redis through
// RedisTTL, which applies the floor.
func Jittered(ttl time.Duration, f float64) time.Duration {
	if f == 0 {
		return ttl
	}
	return max(time.Duration(float64(ttl)*(1-f+2*f*rand.Float64())), time.Nanosecond)
}

// MinTTL is the shortest expiry written to Redis: PX and PEXPIRE count
// whole milliseconds and refuse 0. New refuses TTL options under it.
const MinTTL = time.Millisecond

// MaxTTL bounds every TTL: jittered by up to (1+f) < 2 and added to the
// current time, a longer one would overflow time.Duration or the Unix
// milliseconds of an envelope's expiry. A century is "forever" for a cache.
const MaxTTL = 100 * 365 * 24 * time.Hour

// RedisTTL is d as an expiry written to Redis: whole milliseconds, at least
// MinTTL. Every expiry the cache sends goes through it (PX), whatever
// computed it: a value's or an absence's TTL, jittered or not, chosen by
// a TTL function or not; a lease; a stale bound; the hold of a tombstone or of
// a tag's time. An envelope's logical expiry is taken from it too, so the
// two agree.
func RedisTTL(d time.Duration) time.Duration {
	return max(d.Truncate(time.Millisecond), MinTTL)
}

// PX is d as the milliseconds of a PX or PEXPIRE argument (RedisTTL).
func PX(d time.Duration) int64 { return RedisTTL(d).Milliseconds() }

// ValueTTL is the TTL (before jitter) to cache v under key with; ok is
// false when v must not be cached. The rule for what a TTL function
// returns: d > 0 (at most MaxTTL) is cached for d; 0 is not cached
// (TTLZero); negative, too long or a panic is not cached either, and is
// reported as an error wrapping ErrInvalidOption (TTLInvalid).
func (f *Format[V]) ValueTTL(key string, v V) (ttl time.Duration, ok bool) {
	if f.cfg.TTLFunc == nil {
		return f.cfg.TTL, true
	}
	d, err := f.callTTLFunc(key, v)
	switch {
	case err == nil && d > 0 && d <= MaxTTL:
		return d, true
	case err == nil && d == 0:
		f.rec.TTLZero.Add(1)
		return 0, false
	case err == nil:
		err = fmt.Errorf("%w: TTL func returned %v for %q (not cached)", errs.ErrInvalidOption, d, key)
	}
	f.rec.TTLInvalid.Add(1)
	f.rec.Report(telemetry.Uncacheable, key, err)
	return 0, false
}

func (f *Format[V]) callTTLFunc(key string, v V) (d time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: TTL func panicked for %q (not cached): %v", errs.ErrInvalidOption, key, p)
		}
	}()
	return f.cfg.TTLFunc(key, v), nil
}
