// Package lease is the fill lease protocol: the placeholder a caller that
// misses writes with SET NX GET PX, the scripts that fill, extend, release,
// take over and heal it (all of them on one key, so every one is Redis
// Cluster safe without hash tags), the keep-alive that extends the leases of
// a slow loader, and the notifications that wake the callers waiting for a
// fill.
package lease

import (
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The lease protocol. A caller that misses writes a placeholder with
//
//	SET key placeholder NX GET PX lease
//
// and reads the reply:
//
//   - nil: the key was empty and the lease is ours; load, then fill with
//     FillScript, which replaces the value only if it still holds OUR
//     placeholder.
//   - an envelope: someone filled the key meanwhile; use it.
//   - another placeholder: someone else is loading; mark it as waited for
//     and wait to be woken by the fill's notification (notify.go), retrying
//     now and then as well (the retry takes over a lease whose holder died
//     once it expires).
//   - a placeholder of this cache's own (Leases.Own): held by nobody, as
//     when a failover kept the lease and lost its fill; take it over with
//     SwapScript and load.
//   - foreign bytes: take the key over with SwapScript and load.
//
// Delete removes whatever the key holds, placeholder included, so a fill that
// loaded before the Delete finds its placeholder gone and is refused: no stale
// value is written back, whatever the timing (the lease idea of Facebook's
// memcache, NSDI 2013). Every script touches one key, so all of them are
// Redis Cluster safe without hash tags.

// SwapScript sets KEYS[1] to ARGV[2] with a PX of ARGV[3] only if it holds
// exactly ARGV[1]: it takes over a key holding foreign bytes or a version
// tombstone (ARGV[1] is those bytes, ARGV[2] our placeholder).
//
// A key's version is a high-water mark that fills keep (see the write
// path, internal/write): a placeholder taking over a version tombstone carries the tombstone's version
// after its token, and the fill of such a placeholder writes that version
// into the envelope (FillScript), so a fill never leaves a key below a
// version it held.
var SwapScript = redis.NewScript(wire.Lua(`
local cur = redis.call('GET', KEYS[1])
if not cur or cur ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], with_kept_version(ARGV[2], cur), 'PX', ARGV[3])
return 1
`))

// ExtendScript renews the lease if KEYS[1] still holds our placeholder
// ARGV[1] (in any of its shapes: owns).
var ExtendScript = redis.NewScript(wire.Lua(`
local mine = owns(redis.call('GET', KEYS[1]), ARGV[1])
if mine then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`))

// ReleaseScript deletes KEYS[1] if it still holds our placeholder, so that a
// failed load does not make the next caller wait out the lease. A placeholder
// that kept a version gives it back as a version tombstone. Waiters that
// marked it are woken (ARGV[2] ARGV[3]: see FillScript).
var ReleaseScript = redis.NewScript(wire.Lua(`
local cur = redis.call('GET', KEYS[1])
local mine, marked = owns(cur, ARGV[1])
if not mine then
	return 0
end
local kept = false
local ver = placeholder_version(cur)
if ver then
	local pttl = redis.call('PTTL', KEYS[1])
	if pttl > 0 then
		redis.call('SET', KEYS[1], tombstone(ver), 'PX', pttl)
		kept = true
	end
end
if not kept then
	redis.call('DEL', KEYS[1])
end
if marked and ARGV[2] and ARGV[2] ~= '' then
	redis.pcall(ARGV[2], ARGV[3], '')
end
return 1
`))

// TypeTakeOverScript sets KEYS[1] to our placeholder ARGV[1] with a PX of
// ARGV[2] if it holds another Redis type than a string (a list, a hash: data
// another program left under a cache key, which GET and SET ... GET answer
// with WRONGTYPE). Such a key is foreign data like any undecodable string: a
// miss that the fill overwrites.
var TypeTakeOverScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1])
if type(t) == 'table' then t = t.ok or t['ok'] end
if t ~= 'string' then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
return 0
`)

// HealScript replaces a placeholder that has no TTL with ours (ARGV[2], PX
// ARGV[3]) if KEYS[1] still holds exactly it (ARGV[1]). Leases are always
// written with a TTL, so such a key was written by something else that looks
// like one: left alone, it would make every reader wait forever.
var HealScript = redis.NewScript(`
if redis.call('PTTL', KEYS[1]) == -1 and redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
	return 1
end
return 0
`)

// FillScript stores ARGV[2] (PX ARGV[3]) in KEYS[1] if it holds our
// placeholder ARGV[1] (marked or not, with or without a kept version: see
// owns in wire.Lua) and returns 1; else it returns 0. A version the
// placeholder kept is written into the envelope's header, so the fill keeps
// the key's version (internal/write). When the placeholder was marked, or the fill is refused (a write replaced the
// placeholder; its waiters should look again), it publishes with ARGV[4]
// (PUBLISH or SPUBLISH, empty for none) on channel ARGV[5]. pcall: a server
// that lacks the command still fills.
var FillScript = redis.NewScript(wire.Lua(`
local cur = redis.call('GET', KEYS[1])
local mine, marked = owns(cur, ARGV[1])
if mine then
	local new = ARGV[2]
	local ver = placeholder_version(cur)
	if ver and is_envelope(new) then
		new = with_version(new, ver)
	end
	redis.call('SET', KEYS[1], new, 'PX', ARGV[3])
	if marked and ARGV[4] ~= '' then
		redis.pcall(ARGV[4], ARGV[5], '')
	end
	return 1
end
if ARGV[4] ~= '' then
	redis.pcall(ARGV[4], ARGV[5], '')
end
return 0
`))

// MarkWaitScript marks the placeholder whose base (magic and token) is
// ARGV[1] under KEYS[1] as waited for (APPEND keeps its TTL and any kept
// version). It returns 1 if KEYS[1] holds it (marked now or before), 0 if the
// key changed meanwhile: look again at once.
var MarkWaitScript = redis.NewScript(wire.Lua(`
local mine, marked = owns(redis.call('GET', KEYS[1]), ARGV[1])
if not mine then
	return 0
end
if not marked then
	redis.call('APPEND', KEYS[1], WAIT_MARK)
end
return 1
`))
