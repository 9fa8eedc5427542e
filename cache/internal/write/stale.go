package write

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Stale-while-revalidate. Instead of deleting an entry on invalidation,
// MarkStale sets the stale flag in its header and cuts its TTL to maxStale. Readers
// keep getting the old value at once; the first reader to see the flag claims
// the refresh (the same header compare-and-set early refresh uses, so exactly
// one caller across processes reloads) and replaces the entry. If no refresh
// lands within maxStale the entry expires and the next read is an ordinary
// miss, so maxStale bounds how stale a served value can be.

// MarkStaleScript: for a value envelope, set the stale flag, clear the
// refreshing flag, advance the fill nonce by one (modulo 2^32) and cap the
// TTL at ARGV[1] ms;
// return 1. The nonce is what makes a refresh that started before this call
// unable to land: its compare-and-set holds the header it marked, and no
// later marking can reproduce that header, since every MarkStale moves the
// nonce on (flags alone would come back: stale -> refreshing -> stale ->
// refreshing). A versioned tombstone or a version tombstone is left as it is
// (3). A lease that kept a version becomes a version tombstone. Anything else (a
// lease, a cached absence, foreign bytes) is deleted as by Delete; return 2.
// Missing: 0. Flags are computed with arithmetic, not the bit library, so
// that the script runs on every Lua Redis embeds.
var MarkStaleScript = redis.NewScript(wire.Lua(`
local v = redis.call('GET', KEYS[1])
if not v then
	return 0
end
local envelope = is_envelope(v)
if envelope and not has_flag(envelope_flags(v), FLAG_NULL) then
	local f = envelope_flags(v)
	if not has_flag(f, FLAG_STALE) then f = f + FLAG_STALE end
	if has_flag(f, FLAG_REFRESHING) then f = f - FLAG_REFRESHING end
	redis.call('SETRANGE', KEYS[1], FLAGS_AT - 1, string.char(f))
	redis.call('SETRANGE', KEYS[1], NONCE_AT - 1, next_nonce(v))
	local pttl = redis.call('PTTL', KEYS[1])
	if pttl < 0 or pttl > tonumber(ARGV[1]) then
		redis.call('PEXPIRE', KEYS[1], ARGV[1])
	end
	return 1
end
-- A versioned tombstone (a null entry with a version) stays: deleting it
-- would let an older versioned write land. So does a version tombstone
-- (DeleteKeepingVersion's), which readers already miss.
if (envelope and envelope_version(v) ~= ZERO_VERSION) or tombstone_version(v) then
	return 3
end
-- A lease that kept a version (waited on or not): the fill is refused as
-- after Delete, and the version stays behind as a version tombstone.
local ver = placeholder_version(v)
if ver then
	local pttl = redis.call('PTTL', KEYS[1])
	if pttl < 1 then pttl = tonumber(ARGV[1]) end
	redis.call('SET', KEYS[1], tombstone(ver), 'PX', pttl)
	return 2
end
redis.call('DEL', KEYS[1])
return 2
`))

// MarkStale is cache.MarkStale, which documents it.
func (c *Writer[V]) MarkStale(ctx context.Context, maxStale time.Duration, keys ...string) error {
	return c.writeEach(ctx, "mark stale", MarkStaleScript, keys, "maxStale", maxStale)
}
