package lock

import (
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The hash hold scripts: the writer of an RWMutex is a hash {owner, n,
// token} under KEYS[1] with a PEXPIRE lease, and keeps its fencing counter
// in a key of its own (fenceLua). A Mutex is a string (mutex_scripts.go);
// the wait list and the release announcement (wakeOneLua) are shared.

// drawTokenLua defines draw_token(last): the next fencing token after last
// (a number; 0 when there is none): one more than last, but at least the
// server's clock in microseconds. The clock floor is what makes a counter
// safe to lose: after a restart without persistence, a FLUSHALL, a failover
// to a replica that missed the last write or an eviction, the next token is
// still larger than every token issued before (each was at most the clock
// when it was issued, or one more than a token kept with the lock), as long
// as the server's clock does not go back. Tokens stay below 2^53, exact in
// Lua's numbers.
const drawTokenLua = `
local function draw_token(last)
  local t = redis.call('TIME')
  local token = last + 1
  local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if token < floor then token = floor end
  return token
end
`

// fenceLua draws the next fencing token of an RWMutex writer from the
// counter at fenceKey (draw_token, which the script defines with
// drawTokenLua) and writes it back with the lease ARGV[2]. Thanks to the
// clock floor the counter needs to live only as long as the lock, and an
// idle lock keeps no key at all.
const fenceLua = `
    local token = draw_token(tonumber(redis.call('GET', fenceKey) or '0'))
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

// pubArgsLua makes ARGV[3..5] the locals wakeOneLua announces a release
// with: pub_cmd (PUBLISH, SPUBLISH or "" for none), pub_channel, pub_payload.
const pubArgsLua = `
local pub_cmd, pub_channel, pub_payload = ARGV[3], ARGV[4], ARGV[5]
`

// wakeOneLua ends a release that freed the lock: with pub_cmd set, it
// publishes on pub_channel the release payload pub_payload and one live
// waiter of the wait list KEYS[2] (its expired members dropped first) for
// the waiter to take the hand-off; nothing when the list is gone or empty.
// Shared by every layout's release. Every release script publishes with
// pcall: a publish the Redis user may not make (no channel permission, see
// docs/acl.md) costs the waiters their wake-up (they poll), never the
// release.
const wakeOneLua = `if pub_cmd == '' then return 0 end
local target = ''
if KEYS[2] then
  if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  target = redis.call('ZRANDMEMBER', KEYS[2])
  if not target then return 0 end
end
redis.pcall(pub_cmd, pub_channel, pub_payload .. '|' .. target)
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
var releaseScript = redis.NewScript(wire.LockLua + pubArgsLua + `
local h = redis.call('HMGET', KEYS[1], F_OWNER, F_HOLDS, F_TOKEN)
if h[1] ~= ARGV[1] then return -1 end
if ARGV[6] and ARGV[6] ~= '' and h[3] ~= ARGV[6] then return -1 end
if ARGV[2] ~= '1' and h[2] ~= '1' then
  return redis.call('HINCRBY', KEYS[1], F_HOLDS, -1)
end
redis.call('DEL', KEYS[1])
` + wakeOneLua)

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
` + keepLeaseLua)

// keepLeaseLua ends a renewal of the lock at KEYS[1]: it makes the lease
// last at least ARGV[2] ms, never shorter, and replies the lease the key
// now has.
const keepLeaseLua = `
local pttl = redis.call('PTTL', KEYS[1])
if pttl < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  pttl = tonumber(ARGV[2])
end
return pttl
`

// ttlScript replies the remaining lease in ms of ARGV[1]'s lock, or -3 when
// ARGV[1] does not hold it.
var ttlScript = redis.NewScript(wire.LockLua + `
if redis.call('HGET', KEYS[1], F_OWNER) ~= ARGV[1] then return -3 end
return redis.call('PTTL', KEYS[1])
`)
