package lock

import (
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The hold scripts: a lock is a hash {owner, n, token} under KEYS[1] with a
// PEXPIRE lease. They serve Mutex, the writer side of RWMutex and each node
// of a Redlock. A Mutex (and a Redlock node) keeps its fencing counter in the
// hash itself: a release removes the owner and the hold count but leaves the
// token, with the lease the lock had, as the floor of the next one (see
// acquireScript); the writer of an RWMutex keeps it in a key of its own
// (fenceLua).

// acquireScript takes the Mutex at KEYS[1] for ARGV[1] with lease ARGV[2]
// ms, drawing a fencing token when ARGV[3] is "1". ARGV[4] is "1" when the
// caller will wait if refused: a refusal then sets the hash's field w, which
// tells the release to look at the wait list (otherwise it does not, which
// saves a command on every uncontended release). Replies as takeHoldLua.
//
// The token is one more than the last token of the hash (kept there after a
// release, for as long as the lock's last lease), but at least the server's
// clock in microseconds: the clock floor is what makes the counter safe to
// lose (see fenceLua). Four commands for a free lock: HMGET, TIME, HSET,
// PEXPIRE.
var acquireScript = redis.NewScript(wire.LockLua + `
local h = redis.call('HMGET', KEYS[1], F_OWNER, F_TOKEN)
local owner = h[1]
if not owner then
  local token = 0
  if ARGV[3] == '1' then
    local t = redis.call('TIME')
    token = tonumber(h[2] or '0') + 1
    local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if token < floor then token = floor end
  end
  redis.call('HSET', KEYS[1], F_OWNER, ARGV[1], F_HOLDS, 1, F_TOKEN, string.format('%.0f', token))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, token, tonumber(ARGV[2])}
end
if owner == ARGV[1] then
  local n = redis.call('HINCRBY', KEYS[1], F_HOLDS, 1)
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    pttl = tonumber(ARGV[2])
  end
  return {n, tonumber(h[2]), pttl}
end
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], F_WAITED, '1') end
return {0, redis.call('PTTL', KEYS[1])}
`)

// fenceLua draws the next fencing token of an RWMutex writer from the
// counter at fenceKey: one
// more than the last, but at least the server's clock in microseconds, and
// writes it back with the lease ARGV[2]. The clock floor is what makes the
// counter safe to lose: after a restart without persistence, a FLUSHALL, a
// failover to a replica that missed the last write or an eviction, the next
// token is still larger than every token issued before (each was at most
// the clock when it was issued), as long as the server's clock does not go
// back. So the counter needs to live only as long as the lock, and an idle
// lock keeps no key at all. Tokens stay below 2^53, exact in Lua's numbers.
const fenceLua = `
    local t = redis.call('TIME')
    local token = tonumber(redis.call('GET', fenceKey) or '0') + 1
    local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if token < floor then token = floor end
    redis.call('SET', fenceKey, string.format('%.0f', token), 'PX', ARGV[2])
    return token
`

// takeHoldLua ends every acquire script that takes the hash lock at
// KEYS[1] for owner ARGV[1] with lease ARGV[2] ms, once the script has
// checked everything else: it needs the local owner (the current holder) and
// a function fence() that draws the new holder's fencing token, and
// onGrant(), run when the lock is granted. A free lock
// is taken; the holder gets one more hold with the same token and a lease at
// least as long as asked (never shorter: see renewScript); anyone else is
// answered {0, pttl}. A grant replies {holds, token, pttl}, the lease the
// key now has.
const takeHoldLua = `
if not owner then
  onGrant()
  local token = fence()
  redis.call('HSET', KEYS[1], F_OWNER, ARGV[1], F_HOLDS, 1, F_TOKEN, string.format('%.0f', token))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, token, tonumber(ARGV[2])}
end
if owner == ARGV[1] then
  onGrant()
  local n = redis.call('HINCRBY', KEYS[1], F_HOLDS, 1)
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    pttl = tonumber(ARGV[2])
  end
  return {n, tonumber(redis.call('HGET', KEYS[1], F_TOKEN)), pttl}
end
return {0, redis.call('PTTL', KEYS[1])}
`

// wakeOneLua ends a release that deleted the lock: with ARGV[3] set, it
// publishes (ARGV[3] is PUBLISH or SPUBLISH, ARGV[4] the channel) the
// release payload ARGV[5] and one live waiter of the wait list KEYS[2] (its expired
// members dropped first) for the waiter to take the hand-off; nothing when
// the list is gone or empty. Shared by every layout's release.
const wakeOneLua = `if ARGV[3] == '' then return 0 end
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
// successor's lock. With ARGV[6] set, only the hold with that fencing token
// is touched: an acquisition given up on can then drop its own hold, never
// one of a later lock of the same owner.
var releaseScript = redis.NewScript(wire.LockLua + `
local h = redis.call('HMGET', KEYS[1], F_OWNER, F_HOLDS, F_TOKEN)
if h[1] ~= ARGV[1] then return -1 end
if ARGV[6] and ARGV[6] ~= '' and h[3] ~= ARGV[6] then return -1 end
if ARGV[2] ~= '1' and h[2] ~= '1' then
  return redis.call('HINCRBY', KEYS[1], F_HOLDS, -1)
end
redis.call('DEL', KEYS[1])
` + wakeOneLua)

// holdReleaseScript is releaseScript for the Mutex layout (acquireScript):
// instead of deleting the hash it removes the owner and the hold count, so
// that the token stays as the floor of the next one, with the lease the lock
// had. It looks at the wait list only when a refused waiter marked the hash
// (field w), and clears the mark when the list is gone. Uncontended, two
// commands: HMGET, HDEL.
var holdReleaseScript = redis.NewScript(wire.LockLua + `
local h = redis.call('HMGET', KEYS[1], F_OWNER, F_HOLDS, F_TOKEN, F_WAITED)
if h[1] ~= ARGV[1] then return -1 end
if ARGV[6] and ARGV[6] ~= '' and h[3] ~= ARGV[6] then return -1 end
if ARGV[2] ~= '1' and h[2] ~= '1' then
  return redis.call('HINCRBY', KEYS[1], F_HOLDS, -1)
end
if ARGV[3] == '' or (KEYS[2] and not h[4]) then
  redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS)
  return 0
end
local target = ''
if KEYS[2] then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS, F_WAITED)
    return 0
  end
  redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  target = redis.call('ZRANDMEMBER', KEYS[2])
  if not target then return 0 end
else
  redis.call('HDEL', KEYS[1], F_OWNER, F_HOLDS)
end
redis.call(ARGV[3], ARGV[4], ARGV[5] .. '|' .. target)
return 0
`)

// waitListScript registers client ARGV[1] on the wait list KEYS[1] for
// ARGV[2] ms (ARGV[3] = "1"), or removes it ("0"). The list itself expires
// when no client has refreshed it for that long.
var waitListScript = redis.NewScript(wire.LockLua + `
if ARGV[3] ~= '1' then return redis.call('ZREM', KEYS[1], ARGV[1]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// renewScript makes ARGV[1]'s lease last at least ARGV[2] ms and replies
// the lease the key now has; 0 when the lock is gone, -1 when another owner
// holds it. It never shortens a lease, and neither does any other script
// of a hold: the lease in Redis then only grows while the owner holds the
// lock, so every reply, even one that comes late or out of order, gives a
// lower bound of it (request sent + pttl), and the holder may keep the
// largest bound it has seen. A script that could shorten the lease would
// make a reply in flight a lie.
var renewScript = redis.NewScript(wire.LockLua + `
local owner = redis.call('HGET', KEYS[1], F_OWNER)
if not owner then return 0 end
if owner ~= ARGV[1] then return -1 end
local pttl = redis.call('PTTL', KEYS[1])
if pttl < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  pttl = tonumber(ARGV[2])
end
return pttl
`)

// ttlScript replies the remaining lease in ms of ARGV[1]'s lock, or -3 when
// ARGV[1] does not hold it.
var ttlScript = redis.NewScript(wire.LockLua + `
if redis.call('HGET', KEYS[1], F_OWNER) ~= ARGV[1] then return -3 end
return redis.call('PTTL', KEYS[1])
`)
