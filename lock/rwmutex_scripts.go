package lock

import (
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The read-write lock scripts. KEYS[1] is the writer's hold hash (the
// layout of hold_scripts.go), KEYS[2] a sorted set of reader owners scored by the
// expiry of their lease (Redis server time, ms), KEYS[3] a hash of reader
// hold counts, KEYS[4] the fencing counter. Every reader has its own lease,
// so a dead reader frees its share on time even while others keep renewing;
// readersPrelude drops the expired ones before anything else.
const readersPrelude = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for i = 1, #dead do redis.call('HDEL', KEYS[3], dead[i]) end
if #dead > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
local function keepReaders()
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', KEYS[2], KEYS[3])
    return 0
  end
  local ttl = tonumber(last[2]) - now
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
  return ttl
end
`

// writersLua drops expired marks of waiting writers (KEYS[5]: writer owner
// -> expiry, server ms). A writer that waits marks itself there, and new
// readers queue behind it: the lock is writer-preferring, so readers that
// keep overlapping cannot starve a writer. A reader that already holds a
// read lock still gets more (nested read locks would deadlock otherwise).
const writersLua = `
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
local function markWriter()
  if ARGV[3] == '0' then return end
  redis.call('ZADD', KEYS[5], now + tonumber(ARGV[3]), ARGV[1])
  local last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')
  redis.call('PEXPIRE', KEYS[5], tonumber(last[2]) - now)
end
`

// readAcquireScript adds a read hold for ARGV[1] with lease ARGV[2] ms,
// unless another owner holds the write lock (its owner may also read: a
// writer can downgrade) or a writer waits (writersLua). Replies {holds, current fencing counter (0 when it
// expired), remaining read lease} or {0, pttl of the writer}. Like every hold
// script, it never shortens a lease.
var readAcquireScript = redis.NewScript(wire.LockLua + readersPrelude + writersLua + `
local w = redis.call('HGET', KEYS[1], F_OWNER)
if w and w ~= ARGV[1] then return {0, redis.call('PTTL', KEYS[1])} end
if not w and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  if #first > 0 then return {0, tonumber(first[2]) - now} end
end
local n = redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
local exp = now + tonumber(ARGV[2])
local cur = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]) or '0')
if cur < exp then
  redis.call('ZADD', KEYS[2], exp, ARGV[1])
  cur = exp
end
keepReaders()
return {n, tonumber(redis.call('GET', KEYS[4]) or '0'), cur - now}
`)

// writeAcquireScript is acquireScript for the writer: the lock must also have
// no reader. Replies {-1, 0} when ARGV[1] itself holds a read lock, since
// waiting for itself would never end; {0, ms} gives the wait for the writer
// or for the longest reader. A refused writer that will wait (ARGV[3], the
// mark's life in ms, not "0") marks itself so that new readers queue behind
// it; taking the lock removes its mark.
var writeAcquireScript = redis.NewScript(wire.LockLua + drawTokenLua + readersPrelude + writersLua + `
local owner = redis.call('HGET', KEYS[1], F_OWNER)
if owner ~= ARGV[1] then
  if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return {-1, 0} end
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if #last > 0 then
    markWriter()
    return {0, tonumber(last[2]) - now}
  end
  if owner then markWriter() end
end
local function onGrant()
  if redis.call('ZREM', KEYS[5], ARGV[1]) == 1 and redis.call('ZCARD', KEYS[5]) == 0 then
    redis.call('DEL', KEYS[5])
  end
end
local fenceKey = KEYS[4]
local function fence()
` + fenceLua + `
end
` + takeHoldLua)

// readRenewScript makes ARGV[1]'s read lease last at least ARGV[2] ms (never
// shorter, as renewScript). Replies the remaining read lease, or 0 when the
// read hold is gone.
var readRenewScript = redis.NewScript(wire.LockLua + readersPrelude + `
local cur = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not cur then return 0 end
cur = tonumber(cur)
local exp = now + tonumber(ARGV[2])
if cur < exp then
  redis.call('ZADD', KEYS[2], exp, ARGV[1])
  cur = exp
end
keepReaders()
return math.max(cur - now, 1)
`)

// readReleaseScript drops one read hold of ARGV[1] (all when ARGV[2] is
// "1"). When the last reader leaves it announces the release like
// releaseScript (ARGV[3..5]). Replies the holds left, 0 when the lock became
// free, -2 when other readers remain, -1 when ARGV[1] held no read lock.
var readReleaseScript = redis.NewScript(wire.LockLua + readersPrelude + `
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return -1 end
if ARGV[2] ~= '1' then
  local n = redis.call('HINCRBY', KEYS[3], ARGV[1], -1)
  if n > 0 then return n end
end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if keepReaders() > 0 then return -2 end
if ARGV[3] ~= '' then redis.pcall(ARGV[3], ARGV[4], ARGV[5]) end
return 0
`)

// readTTLScript replies the remaining read lease of ARGV[1] in ms, or -3.
var readTTLScript = redis.NewScript(wire.LockLua + readersPrelude + `
local s = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not s then return -3 end
return tonumber(s) - now
`)

// writerGivesUpScript removes the mark of waiting writer ARGV[1] from KEYS[1]
// and, if it was there, wakes the readers queued behind it (ARGV[2..4] as
// releaseScript's ARGV[3..5]).
var writerGivesUpScript = redis.NewScript(wire.LockLua + `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 and ARGV[2] ~= '' then
  redis.pcall(ARGV[2], ARGV[3], ARGV[4])
end
return 1
`)
