package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stale-while-revalidate. Instead of deleting an entry on invalidation,
// MarkStale sets flagStale in its header and cuts its TTL to maxStale. Readers
// keep getting the old value at once; the first reader to see the flag claims
// the refresh (the same header compare-and-set early refresh uses, so exactly
// one caller across processes reloads) and replaces the entry. If no refresh
// lands within maxStale the entry expires and the next read is an ordinary
// miss, so maxStale bounds how stale a served value can be.

// markStaleScript: for a value envelope, set flagStale, clear flagRefreshing,
// advance the fill nonce (bytes 25..28) by one and cap the TTL at ARGV[1] ms;
// return 1. The nonce is what makes a refresh that started before this call
// unable to land: its compare-and-set holds the header it marked, and no
// later marking can reproduce that header, since every MarkStale moves the
// nonce on (flags alone would come back: stale -> refreshing -> stale ->
// refreshing). A versioned tombstone or a version tombstone is left as it is
// (3). A lease that kept a version becomes a version tombstone. Anything else (a
// lease, a cached absence, foreign bytes) is deleted as by Delete; return 2.
// Missing: 0. Flags are computed with arithmetic, not the bit library, so
// that the script runs on every Lua Redis embeds.
var markStaleScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
	return 0
end
local envelope = #v >= ` + headerSizeLua + ` and string.byte(v, 1) == 254 and string.byte(v, 2) == 99
if envelope and string.byte(v, 4) % 2 == 0 then
	-- Flag arithmetic instead of the bit library, which not every Lua
	-- that speaks Redis's scripting (miniredis's) provides.
	local f = string.byte(v, 4)
	if math.floor(f / 4) % 2 == 0 then f = f + 4 end
	if math.floor(f / 8) % 2 == 1 then f = f - 8 end
	local b1, b2, b3, b4 = string.byte(v, 25, 28)
	local n = (((b1 * 256 + b2) * 256 + b3) * 256 + b4 + 1) % 4294967296
	local nonce = string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
	redis.call('SETRANGE', KEYS[1], 3, string.char(f))
	redis.call('SETRANGE', KEYS[1], 24, nonce)
	local pttl = redis.call('PTTL', KEYS[1])
	if pttl < 0 or pttl > tonumber(ARGV[1]) then
		redis.call('PEXPIRE', KEYS[1], ARGV[1])
	end
	return 1
end
-- A versioned tombstone (a null entry with a version) stays: deleting it
-- would let an older versioned write land. So does a version tombstone
-- (DeleteKeepingVersion's), which readers already miss.
if envelope and string.sub(v, 5, 12) ~= string.rep('\0', 8) then
	return 3
end
if #v == 10 and string.byte(v, 1) == 254 and string.byte(v, 2) == 118 then
	return 3
end
-- A lease that kept a version: the fill is refused as after Delete, and the
-- version stays behind as a version tombstone.
if #v == 26 and string.byte(v, 1) == 254 and string.byte(v, 2) == 108 then
	local pttl = redis.call('PTTL', KEYS[1])
	if pttl < 1 then pttl = tonumber(ARGV[1]) end
	redis.call('SET', KEYS[1], '\254v' .. string.sub(v, 19, 26), 'PX', pttl)
	return 2
end
redis.call('DEL', KEYS[1])
return 2
`)

// MarkStale marks the keys' entries stale instead of removing them: readers
// get the old value at once while exactly one caller reloads it, and a stale
// value is served for at most maxStale. Entries that hold no value (a lease, a
// cached absence) are deleted, so an in-flight fill is refused as after
// Delete.
func (c *Cache[V]) MarkStale(ctx context.Context, maxStale time.Duration, keys ...string) error {
	if c.isClosed() {
		return ErrClosed
	}
	if maxStale < time.Millisecond {
		return fmt.Errorf("%w: maxStale %v must be at least 1ms", ErrInvalidOption, maxStale)
	}
	return c.writeEach(ctx, "mark stale", markStaleScript, keys, maxStale.Milliseconds())
}
