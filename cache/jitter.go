package cache

import (
	"math/rand/v2"
	"time"
)

// jittered spreads ttl uniformly over [ttl·(1−f), ttl·(1+f)], so that keys
// filled in the same instant do not all expire in the same instant; a
// positive ttl stays positive. What it returns goes to Redis through
// redisTTL, which applies the floor.
func jittered(ttl time.Duration, f float64) time.Duration {
	if f == 0 {
		return ttl
	}
	return max(time.Duration(float64(ttl)*(1-f+2*f*rand.Float64())), time.Nanosecond)
}

// minTTL is the shortest expiry written to Redis: PX and PEXPIRE count
// whole milliseconds and refuse 0. New refuses TTL options under it
// (checkTTL).
const minTTL = time.Millisecond

// redisTTL is d as an expiry written to Redis: whole milliseconds, at least
// minTTL. Every expiry the cache sends goes through it (px), whatever
// computed it: a value's or an absence's TTL, jittered or not, chosen by
// WithTTLFunc or not; a lease; a stale bound; the hold of a tombstone or of
// a tag's time. An envelope's logical expiry is taken from it too, so the
// two agree.
func redisTTL(d time.Duration) time.Duration {
	return max(d.Truncate(time.Millisecond), minTTL)
}

// px is d as the milliseconds of a PX or PEXPIRE argument (redisTTL).
func px(d time.Duration) int64 { return redisTTL(d).Milliseconds() }
