package lock

import "github.com/redis/go-redis/v9"

// The hold scripts: a lock is a hash {owner, n, token} under KEYS[1] with a
// PEXPIRE lease. KEYS[2] is the fencing counter (same hash tag). They serve
// Mutex, the writer side of RWMutex and each node of a Redlock.

// acquireScript takes the lock for ARGV[1] with lease ARGV[2] ms, drawing a
// fencing token from KEYS[2] when ARGV[3] is "1". The owner already holding
// it gets one more hold with the same token, and a lease at least as long as
// asked (a reentrant acquisition never shortens the lease). Replies
// {holds, token}, or {0, pttl of the holder} when someone else holds it.
var acquireScript = redis.NewScript(`
local owner = redis.call('HGET', KEYS[1], 'owner')
local function fence()
  if ARGV[3] == '1' then return redis.call('INCR', KEYS[2]) end
  return 0
end
` + takeHoldLua)

// takeHoldLua ends every acquire script that takes the hash lock at
// KEYS[1] for owner ARGV[1] with lease ARGV[2] ms, once the script has
// checked everything else: it needs the local owner (the current holder) and
// a function fence() that draws the new holder's fencing token. A free lock
// is taken; the holder gets one more hold with the same token and a lease at
// least as long as asked; anyone else is answered {0, pttl}.
const takeHoldLua = `
if not owner then
  local token = fence()
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'n', 1, 'token', token)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, token}
end
if owner == ARGV[1] then
  local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return {n, tonumber(redis.call('HGET', KEYS[1], 'token'))}
end
return {0, redis.call('PTTL', KEYS[1])}
`

// releaseScript drops one hold of ARGV[1] (all of them when ARGV[2] is "1")
// and, when none is left, deletes the lock and announces it with command
// ARGV[3] (PUBLISH or SPUBLISH; "" for none) on channel ARGV[4]. The message
// is ARGV[5] (the releasing client) and, after a '|', the client that should
// wake a waiter: one drawn at random from the wait list KEYS[2] (clients
// register there while they have waiters, with an expiry). With a wait list
// and nobody on it, nothing is published; without one (KEYS[2] absent) the
// target is "", every client. Replies the holds left, 0 when freed, -1 when
// ARGV[1] is not the owner: a caller whose lease ran out can never delete a
// successor's lock.
var releaseScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'owner', 'n')
if h[1] ~= ARGV[1] then return -1 end
if ARGV[2] ~= '1' and h[2] ~= '1' then
  return redis.call('HINCRBY', KEYS[1], 'n', -1)
end
redis.call('DEL', KEYS[1])
if ARGV[3] == '' then return 0 end
local target = ''
if KEYS[2] then
  if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  target = redis.call('ZRANDMEMBER', KEYS[2])
  if not target then return 0 end
end
redis.call(ARGV[3], ARGV[4], ARGV[5] .. '|' .. target)
return 0
`)

// waitListScript registers client ARGV[1] on the wait list KEYS[1] for
// ARGV[2] ms (ARGV[3] = "1"), or removes it ("0"). The list itself expires
// when no client has refreshed it for that long.
var waitListScript = redis.NewScript(`
if ARGV[3] ~= '1' then return redis.call('ZREM', KEYS[1], ARGV[1]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// renewScript resets the lease of ARGV[1]'s lock to ARGV[2] ms. Replies 1,
// 0 when the lock is gone, -1 when another owner holds it.
var renewScript = redis.NewScript(`
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
if owner ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// ttlScript replies the remaining lease in ms of ARGV[1]'s lock, or -3 when
// ARGV[1] does not hold it.
var ttlScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return -3 end
return redis.call('PTTL', KEYS[1])
`)
