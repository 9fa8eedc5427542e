package cache

import (
	"context"
	"encoding/binary"

	"github.com/redis/go-redis/v9"
)

// Versioned writes settle concurrent writers that push values into the cache
// out of order: each write carries a version (a row version, an update
// timestamp, a binlog position) and lands only if it is newer than the one
// stored. A versioned delete leaves a tombstone (a null entry carrying the
// version) so that an older write arriving after it is refused too. Versions
// compare as unsigned 64-bit integers, byte by byte inside the script, so the
// whole range is exact.

// versionedSetScript writes ARGV[2] with PX ARGV[3] unless KEYS[1] holds an
// envelope whose version (bytes 5..12) is at least ARGV[1]. A placeholder or
// foreign bytes count as version zero: a versioned write replaces them (and
// an in-flight fill is then refused, as after Set).
var versionedSetScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and #cur >= ` + headerSizeLua + ` and string.byte(cur, 1) == 254 and string.byte(cur, 2) == 99 then
	local have = string.sub(cur, 5, 12)
	local want = ARGV[1]
	local newer = false
	for i = 1, 8 do
		local a, b = string.byte(want, i), string.byte(have, i)
		if a ~= b then
			newer = a > b
			break
		end
	end
	if not newer then
		return 0
	end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

// SetVersioned stores v under key only if version is newer than the version
// of the entry there (an entry written by Get's fill or Set has version 0). It
// reports whether v was stored.
func (c *Cache[V]) SetVersioned(ctx context.Context, key string, v V, version uint64) (bool, error) {
	if err := c.check(ctx, key); err != nil {
		return false, err
	}
	payload, err := c.encode(key, v)
	if err != nil {
		return false, err
	}
	env, ttl := c.entry(false, version, 0, payload)
	return c.runVersioned(ctx, key, version, env, ttl.Milliseconds())
}

// DeleteVersioned replaces the entry with a tombstone carrying version, unless
// a newer version is stored; Get answers ErrNotFound for the tombstone until
// the null TTL runs out, and an older SetVersioned is refused meanwhile. Use
// it when the row was deleted at that version.
func (c *Cache[V]) DeleteVersioned(ctx context.Context, key string, version uint64) (bool, error) {
	if err := c.check(ctx, key); err != nil {
		return false, err
	}
	env, ttl := c.entry(true, version, 0, nil)
	return c.runVersioned(ctx, key, version, env, ttl.Milliseconds())
}

func (c *Cache[V]) runVersioned(ctx context.Context, key string, version uint64, env []byte, ttlMS int64) (bool, error) {
	ver := binary.BigEndian.AppendUint64(nil, version)
	n, err := versionedSetScript.Run(ctx, c.rdb, []string{c.cfg.prefix + key}, ver, env, ttlMS).Int()
	if err = callerErr(ctx, err); err != nil {
		return false, c.redisError(key, "versioned write", err)
	}
	if n == 1 {
		c.forget([]string{key})
		c.afterWrite(ctx, key)
	}
	return n == 1, nil
}
