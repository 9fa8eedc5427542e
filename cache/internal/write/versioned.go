package write

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Versioned writes settle concurrent writers that push values into the cache
// out of order: each write carries a version (a row version, an update
// timestamp, a binlog position) and lands only if it is newer than the one
// stored. A versioned delete leaves a tombstone (a null entry carrying the
// version) so that an older write arriving after it is refused too. Versions
// compare as unsigned 64-bit integers, byte by byte inside the script, so the
// whole range is exact.
//
// A plain delete would wipe the stored version with the value, and a late
// older write would then land. DeleteKeepingVersion removes the value but
// leaves a version tombstone behind for a while (wire.AppendTombstone). Readers see a miss and reload (the bytes are not an
// envelope); versioned writes compare against the version it carries.

// VersionedSetScript writes ARGV[2] with PX ARGV[3] unless KEYS[1] holds an
// envelope (version in bytes 5..12) or a version tombstone whose version is
// at least ARGV[1], or a placeholder that kept such a version (any of its
// shapes: version_of in wire.Lua). Another placeholder or foreign bytes count
// as version zero: a versioned write replaces them (and an in-flight fill is then refused, as
// after Set).
var VersionedSetScript = redis.NewScript(wire.Lua(`
local ver = version_of(redis.call('GET', KEYS[1]))
if ver and not version_newer(ARGV[1], ver) then
	return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`))

// SetVersioned is cache.SetVersioned, which documents it.
func (c *Writer[V]) SetVersioned(ctx context.Context, key string, v V, version uint64) (bool, error) {
	if err := c.Life.Check(ctx, key); err != nil {
		return false, err
	}
	base, cacheable := c.Format.ValueTTL(key, v)
	if !cacheable { // a version tombstone: readers miss, older versions are refused (ttlfunc.go)
		return c.runVersioned(ctx, key, version, wire.AppendTombstone(nil, version), entry.PX(c.Format.NullTTL()))
	}
	payload, tags, err := c.Format.EncodeTagged(key, v)
	if err != nil {
		return false, err
	}
	env, ttl := c.Format.TaggedEntry(false, version, 0, payload, base, tags, c.Format.Now(), nil)
	return c.runVersioned(ctx, key, version, env, entry.PX(ttl))
}

// DeleteVersioned is cache.DeleteVersioned, which documents it.
func (c *Writer[V]) DeleteVersioned(ctx context.Context, key string, version uint64) (bool, error) {
	if err := c.Life.Check(ctx, key); err != nil {
		return false, err
	}
	env, ttl := c.Format.Entry(true, version, 0, nil)
	return c.runVersioned(ctx, key, version, env, entry.PX(ttl))
}

func (c *Writer[V]) runVersioned(ctx context.Context, key string, version uint64, env []byte, ttlMS int64) (bool, error) {
	ver := binary.BigEndian.AppendUint64(nil, version)
	n, err := boundedWrite(c, ctx, []string{key}, func(ctx context.Context) (int, error) {
		return VersionedSetScript.Run(ctx, c.Redis.Client(), []string{c.Keys.Key(key)}, ver, env, ttlMS).Int()
	}, func(n int) bool { return n == 1 })
	if err = errs.Caller(ctx, err); err != nil {
		return false, c.Redis.Error(key, "versioned write", err)
	}
	if n == 1 {
		c.eng.Forget([]string{key})
		c.afterWrite(ctx, key)
	}
	// Refused too: a write retried after ErrReplicaLag finds its version
	// there, and must still wait for the replicas.
	if err := c.replicated(ctx, "versioned write", key, []string{c.Keys.Key(key)}); err != nil {
		return n == 1, err // on the master, not on every replica
	}
	return n == 1, nil
}

// DeleteKeepingVersionScript deletes KEYS[1], but if it holds an envelope or
// a tombstone with a non-zero version, it leaves a version tombstone with
// that version and a PX of ARGV[1]. Only the header is read, so a big value
// is not copied. Reply: 2 tombstone left, 1 deleted, 0 missing.
var DeleteKeepingVersionScript = redis.NewScript(wire.Lua(`
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then
	return 0
end
if t == 'string' then
	local ver = version_of(redis.call('GETRANGE', KEYS[1], 0, HEADER_SIZE - 1))
	if ver and ver ~= ZERO_VERSION then
		redis.call('UNLINK', KEYS[1])
		redis.call('SET', KEYS[1], tombstone(ver), 'PX', ARGV[1])
		return 2
	end
end
redis.call('UNLINK', KEYS[1])
return 1
`))

// DeleteKeepingVersion is cache.DeleteKeepingVersion, which documents it.
func (c *Writer[V]) DeleteKeepingVersion(ctx context.Context, hold time.Duration, keys ...string) error {
	return c.writeEach(ctx, "delete keeping version", DeleteKeepingVersionScript, keys, "tombstone hold", hold)
}
