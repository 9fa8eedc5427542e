// Package members counts the live instances of a fleet that shares a budget
// in Redis (ratelimit's Limiter, stock's Admission), so that the instances
// that reach Redis can leave room for the share of those that cannot.
//
// Each instance beats into one sorted set (its id, scored with when its
// beat runs out by the Redis server's clock): inline, on the calls that use
// the budget, at most once every Beat, one script. The live count is the
// number of unexpired beats. An instance cut off from Redis stops beating;
// within TTL after its last beat the others count it out and shrink the
// shared budget to the live instances' shares (Share), while it spends its
// own share locally. An instance that makes no call for TTL is counted out
// too: the fleet's budget then shrinks while it is idle, never widens.
package members

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// Beat is how often an instance beats at most.
	Beat = 250 * time.Millisecond
	// TTL is how long a beat counts.
	TTL = 3 * Beat
)

// beatScript records ARGV[1]'s beat in the set KEYS[1] until TTL ARGV[2]
// ms from now (the server's clock), drops the beats that ran out and
// replies how many are left.
var beatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return redis.call('ZCARD', KEYS[1])
`)

// Fleet is one instance's view of its fleet of n. The zero value is not
// usable: make it with New.
type Fleet struct {
	rdb   redis.UniversalClient
	key   string
	id    string
	n     int
	next  atomic.Int64 // unix nanos of the next beat due
	live  atomic.Int64 // the live count at the last beat (n before the first)
	trust atomic.Int64 // unix nanos from which a count below n is believed
}

// New returns the view of an instance of a fleet of n that beats under key.
func New(rdb redis.UniversalClient, key string, n int) *Fleet {
	var b [8]byte
	_, _ = rand.Read(b[:])
	f := &Fleet{rdb: rdb, key: key, id: hex.EncodeToString(b[:]), n: n}
	f.live.Store(int64(n))
	return f
}

// Live returns how many instances are live (at least 1, at most n),
// beating first if a beat is due (one caller at a time; the others use the
// last count). A failed beat leaves the count as it was and returns the
// error: the caller's own call to Redis decides what a failure means.
func (f *Fleet) Live(ctx context.Context) (int, error) {
	now := time.Now().UnixNano()
	if due := f.next.Load(); now >= due && f.next.CompareAndSwap(due, now+int64(Beat)) {
		c, err := beatScript.Run(ctx, f.rdb, []string{f.key}, f.id, TTL.Milliseconds()).Int64()
		if err != nil {
			f.next.Store(0) // beat again at the next call
			return f.count(now), err
		}
		// The first beat's count is believed once the others have had TTL
		// to beat too (a fleet starting).
		f.trust.CompareAndSwap(0, now+int64(TTL))
		f.live.Store(c)
	}
	return f.count(now), nil
}

func (f *Fleet) count(now int64) int {
	if t := f.trust.Load(); t == 0 || now < t {
		return f.n
	}
	return int(min(max(f.live.Load(), 1), int64(f.n)))
}

// Share scales a budget of rate per period with burst to live instances
// of n: the same rate over a longer period (exact in whole numbers), and
// the burst in proportion (at least 1).
func Share(period time.Duration, burst, live, n int) (time.Duration, int) {
	if live >= n || n <= 1 {
		return period, burst
	}
	return period * time.Duration(n) / time.Duration(live), max(1, burst*live/n)
}
