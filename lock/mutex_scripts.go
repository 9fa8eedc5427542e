package lock

import (
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The Mutex scripts. A Mutex (and each node of a Redlock) is one string
// under KEYS[1], "#<token>:<holds>[w]:<owner>" with a PEXPIRE lease, read by
// fenced_of and written by fenced (wire.LockLua, wire.LockFencedLua). A
// release keeps "<token>" with the lease the lock had: the token is the
// floor of the next holder's, so the fencing counter needs no key of its
// own. Taking a free lock is GET, TIME, SET; a holder releases it with one
// SET ... GET. Each script first handles that common case with as little
// Lua and as few arguments as it can (no parsing: Redis's own commands are
// the cost), then defines the rest.
//
// Each script reads the key with redis.pcall, so that the hash an earlier
// version of the package kept there (wire.LockField*) is an error reply it
// can look at instead of a failure: the acquire script reads such a hash as
// held while it has an owner and takes its token as the floor once it has
// none, and the other scripts find no hold of theirs in it. The scripts of
// the hash layout fail with WRONGTYPE on a string: processes of both
// versions sharing a Redis during a rolling deploy never grant one lock
// twice, and tokens keep growing across them.

// acquireScript takes the Mutex at KEYS[1] for ARGV[1] with lease ARGV[2]
// ms and a fencing token. ARGV[3] (absent by default) is "1" when the
// caller will wait if refused: a refusal then marks the lock (w), which
// tells the release to look at the wait list (otherwise it does not, which
// saves a command on every uncontended release).
//
// A free lock is taken with the token drawn from the one the lock keeps
// (draw_token), and the reply is that token alone: the lease is the one
// asked. The common case, a lock gone or released with a token behind the
// clock (any number under the key reads as a released token), comes first
// and spends nothing on parsing or on defining functions. The holder gets
// one more hold with the same token and a lease at least as long as asked
// (never shorter: see renewScript), replying {holds, token, pttl}; anyone
// else is answered {0, pttl}, and so is any string that is not a fenced
// lock (a Mutex WithoutFencing).
var acquireScript = redis.NewScript(`
local v = redis.pcall('GET', KEYS[1])
local last = 0
if v then last = tonumber(v) end
if last and last >= 0 and last < 9007199254740992 then
  local t = redis.call('TIME')
  local now = t[1] * 1000000 + t[2]
  if last < now then
    local us = t[2]
    if #us < 6 then us = string.rep('0', 6 - #us) .. us end
    local token = t[1] .. us
    redis.call('SET', KEYS[1], ` + wire.LockOneHoldLua("token", "ARGV[1]") + `, 'PX', ARGV[2])
    return now
  end
end
` + wire.LockFencedLua + drawTokenLua + wire.LockLua + `
local mark = ''
if v and type(v) ~= 'string' then
  local h = redis.call('HMGET', KEYS[1], F_OWNER, F_TOKEN, F_WAITED)
  if h[1] then
    if ARGV[3] == '1' and not h[3] then redis.call('HSET', KEYS[1], F_WAITED, '1') end
    return {0, redis.call('PTTL', KEYS[1])}
  end
  last = tonumber(h[2] or '0') or 0
  if h[3] then mark = WAITED end
elseif v then
  local token, n, m, owner = fenced_of(v)
  if not token then return {0, redis.call('PTTL', KEYS[1])} end
  if n > 0 then
    if owner == ARGV[1] then
      local pttl = redis.call('PTTL', KEYS[1])
      if pttl < tonumber(ARGV[2]) then
        redis.call('SET', KEYS[1], fenced(token, n + 1, m, owner), 'PX', ARGV[2])
        pttl = tonumber(ARGV[2])
      else
        redis.call('SET', KEYS[1], fenced(token, n + 1, m, owner), 'KEEPTTL')
      end
      return {n + 1, tonumber(token), pttl}
    end
    if ARGV[3] == '1' and m == '' then
      redis.call('SET', KEYS[1], fenced(token, n, WAITED, owner), 'KEEPTTL')
    end
    return {0, redis.call('PTTL', KEYS[1])}
  end
  last, mark = tonumber(token), m
end
local token = draw_token(last)
redis.call('SET', KEYS[1], fenced(string.format('%.0f', token), 1, mark, ARGV[1]), 'PX', ARGV[2])
return token
`)

// mutexFreeLua ends the release scripts of the Mutex: it drops one hold of
// owner (all of them when all is set) from v, the key's string, and, when
// none is left, keeps only the token, with the lease the lock had. It
// announces the release (wakeOneLua, pub_*) only when a refused waiter
// marked the lock, and clears the mark when the wait list KEYS[2] is gone;
// without a wait list (KEYS[2] absent) every release is announced. Replies
// the holds left, 0 when freed, -1 when owner is not the holder: a caller
// whose lease ran out can never release a successor's lock. With only set,
// only the hold with that fencing token is touched: an acquisition given up
// on can then drop its own hold, never one of a later lock of the same
// owner.
const mutexFreeLua = `
local token, n, mark, holder = fenced_of(v)
if holder ~= owner or n < 1 then return -1 end
if only and only ~= '' and token ~= only then return -1 end
if not all and n > 1 then
  redis.call('SET', KEYS[1], fenced(token, n - 1, mark, holder), 'KEEPTTL')
  return n - 1
end
if KEYS[2] and mark ~= '' and pub_cmd ~= '' and redis.call('EXISTS', KEYS[2]) == 0 then mark = '' end
redis.call('SET', KEYS[1], fenced(token, 0, mark, ''), 'KEEPTTL')
if KEYS[2] and mark == '' then return 0 end
` + wakeOneLua

// mutexReleaseScript releases ARGV[1]'s hold of the Mutex at KEYS[1]
// (mutexFreeLua; all of them when ARGV[2] is "1", only the one with token
// ARGV[6] when set), with the arguments and replies of releaseScript.
var mutexReleaseScript = redis.NewScript(`
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return -1 end
local owner, all, only = ARGV[1], ARGV[2] == '1', ARGV[6]
` + pubArgsLua + wire.LockFencedLua + wire.LockLua + mutexFreeLua)

// mutexUnlockScript is mutexReleaseScript for a holder that knows its
// token, with fewer arguments: ARGV[1] is the lock as the holder holds it
// once, unmarked, ARGV[2] that lock released, and ARGV[3], when the
// release is announced, "<command>|<payload>" (the channel is the lock's,
// wire.LockReleasedSuffix). It swaps ARGV[2] in with one SET ... GET
// (keeping the lease), which is all it takes when the key held exactly
// ARGV[1]; anything else is put back as it was (the same lease too), and
// mutexFreeLua drops one hold of the owner ARGV[1] names, with the outcome
// mutexReleaseScript would have had. The caller runs it only where a
// release may go unannounced unless marked (with a wait list, or without
// notifications).
var mutexUnlockScript = redis.NewScript(`
local v = redis.pcall('SET', KEYS[1], ARGV[2], 'XX', 'KEEPTTL', 'GET')
if v == ARGV[1] then return 0 end
if type(v) ~= 'string' then return -1 end
redis.call('SET', KEYS[1], v, 'KEEPTTL')
` + wire.LockFencedLua + wire.LockLua + `
local _, _, _, owner = fenced_of(ARGV[1])
local all, only = false, nil
local pub_cmd, pub_channel, pub_payload = '', KEYS[1] .. '` + wire.LockReleasedSuffix + `', ''
if ARGV[3] then
  local bar = string.find(ARGV[3], '|', 1, true)
  pub_cmd, pub_payload = string.sub(ARGV[3], 1, bar - 1), string.sub(ARGV[3], bar + 1)
end
` + mutexFreeLua)

// mutexRenewScript is renewScript for both string layouts of a Mutex
// (fenced and WithoutFencing), with its arguments and replies; a released
// lock is gone (0).
var mutexRenewScript = redis.NewScript(wire.LockLua + `
local v = redis.pcall('GET', KEYS[1])
if not v then return 0 end
if type(v) ~= 'string' then return -1 end
local n, owner = holder_of(v)
if n < 1 then return 0 end
if owner ~= ARGV[1] then return -1 end
` + keepLeaseLua)

// mutexTTLScript replies the remaining lease in ms of ARGV[1]'s lock (either
// string layout), or -3 when ARGV[1] does not hold it.
var mutexTTLScript = redis.NewScript(wire.LockLua + `
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return -3 end
local n, owner = holder_of(v)
if n < 1 or owner ~= ARGV[1] then return -3 end
return redis.call('PTTL', KEYS[1])
`)
