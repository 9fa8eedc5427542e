package lock

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// WithoutFencing makes a Mutex issue no fencing tokens, for callers that
// protect nothing a paused holder could corrupt (or check something else
// than a token). Its Handle.Token is 0, which ExecFenced and SetFenced
// always refuse, so a resource guarded by tokens cannot be written by
// mistake under such a lock.
//
// What it buys is speed: the lock is a plain string holding the owner, and
// taking a free lock is one SET NX PX command instead of a script
// (reentrant holds, and refusals that need the holder's lease, still run
// one). Everything else is kept: the owner-checked release, the watchdog,
// reentrancy, release notifications for waiters and the bounded calls.
//
// Every client of one lock name must agree on this option: the two layouts
// exclude each other (neither takes a key the other holds), but a client of
// one layout finds the lock taken, and waits, while a client of the other
// holds it or keeps its fencing token. It configures a Client and its
// Mutexes; given to an RWMutex, a Redlock or a Semaphore it is invalid.
func WithoutFencing() Option {
	return func(c *config) {
		if c.errs.Only("WithoutFencing", partClient|partMutex, c.built, partNames) {
			c.unfenced = true
		}
	}
}

// newUnfencedBackend is the holdBackend of a Mutex made WithoutFencing: the
// lock is a string "<holds>:<owner>" with a PEXPIRE lease.
func newUnfencedBackend(rdb redis.UniversalClient, name, base, channel, waitList string, pub publisher, cfg *config) *holdBackend {
	b := newHoldBackend(rdb, name, []string{base}, unfencedAcquireScript, channel, waitList, pub, cfg)
	b.rel, b.renewS, b.ttlS, b.plain = unfencedReleaseScript, mutexRenewScript, mutexTTLScript, true
	return b
}

// acquireUnfenced takes a free lock with SET key "1:<owner>" NX PX lease:
// one command, no script. Only when the key exists does a script run, to
// add a reentrant hold when the lock is owner's own, or to learn the
// holder's lease for the wait. (SET ... GET would answer both in one
// command, but a successful SET NX GET replies nil, which go-redis reports
// as an error and classifies on every call: slower than the plain reply.)
func (b *holdBackend) acquireUnfenced(ctx context.Context, owner string, lease time.Duration) (acquired, error) {
	start := time.Now()
	ok, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(lease), func(ctx context.Context) (bool, error) {
		return b.rdb.SetNX(ctx, b.keys[0], "1:"+owner, lease).Result()
	}, func(ok bool, err error) {
		if err == nil && ok {
			// The caller gave up before this hold came back: give it back.
			b.giveBack(owner, 0)
		}
	})
	if err != nil {
		return acquired{}, kind.Errorf("cacheguard: lock: acquire %q: %w", b.lname, err)
	}
	if ok {
		return acquired{holds: 1, start: start, validUntil: b.cfg.validUntil(start, ms(lease))}, nil
	}
	start = time.Now()
	v, err := call.Do(b.cfg.calls, ctx, b.cfg.callTimeout(lease), func(ctx context.Context) ([]int64, error) {
		return b.acq.Run(ctx, b.rdb, b.keys, owner, b.args.leaseArg(lease)).Int64Slice()
	}, func(v []int64, err error) {
		if err == nil && len(v) > 1 && v[0] > 0 {
			b.giveBack(owner, 0)
		}
	})
	if err != nil {
		return acquired{}, kind.Errorf("cacheguard: lock: acquire %q: %w", b.lname, err)
	}
	return parseAcquired(v, start, b.cfg)
}

// The unfenced layout: KEYS[1] is a string "<holds>:<owner>" with a
// PEXPIRE lease, read by owner_of and written by unfenced (wire.LockLua).

// unfencedAcquireScript takes the lock at KEYS[1] for ARGV[1] with lease
// ARGV[2] ms, or adds a hold when ARGV[1] holds it (with a lease at least
// as long as asked, never shorter: see renewScript). Replies as
// acquireScript, with token 0: {holds, 0, pttl} when granted, {0, pttl}
// when another owner holds it.
var unfencedAcquireScript = redis.NewScript(wire.LockLua + `
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], unfenced(1, ARGV[1]), 'PX', ARGV[2])
  return {1, 0, tonumber(ARGV[2])}
end
local n, o = owner_of(v)
if o ~= ARGV[1] or n < 1 then return {0, redis.call('PTTL', KEYS[1])} end
n = n + 1
local pttl = redis.call('PTTL', KEYS[1])
if pttl < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], unfenced(n, ARGV[1]), 'PX', ARGV[2])
  pttl = tonumber(ARGV[2])
else
  redis.call('SET', KEYS[1], unfenced(n, ARGV[1]), 'KEEPTTL')
end
return {n, 0, pttl}
`)

// unfencedReleaseScript is releaseScript for the unfenced layout, with the
// same arguments and replies (ARGV[6], the token, is not used: there is
// none). Uncontended, with a wait list: GET, DEL, EXISTS.
var unfencedReleaseScript = redis.NewScript(wire.LockLua + pubArgsLua + `
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
local n, o = owner_of(v)
if o ~= ARGV[1] or n < 1 then return -1 end
if ARGV[2] ~= '1' and n > 1 then
  redis.call('SET', KEYS[1], unfenced(n - 1, ARGV[1]), 'KEEPTTL')
  return n - 1
end
redis.call('DEL', KEYS[1])
` + wakeOneLua)
