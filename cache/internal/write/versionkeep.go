package write

import (
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A key's version is a high-water mark. Versioned writes (SetVersioned,
// DeleteVersioned, and consistency's writers built on them) land only above
// it, and DeleteKeepingVersion leaves it behind in a version tombstone. The
// writes that carry no version keep it, so versioned and plain writes can be
// mixed on one key:
//
//   - Set writes its value with the version the key held (setKeepingVersion).
//   - A fill that takes over a version tombstone keeps the tombstone's
//     version in its placeholder, and the fill writes it into the envelope
//     (swapScript, fillScript); a released lease gives it back as a version
//     tombstone.
//   - MarkStale keeps the version of a value (in its header) and leaves a
//     version tombstone alone.
//
// Plain Delete is the exception, on purpose: it empties the key, version
// included (use DeleteKeepingVersion to keep it), and a version lives only as
// long as the entry or tombstone carrying it (WithTombstoneTTL in consistency
// bounds how long a delete remembers one).

// SetKeepingVersionScript sets KEYS[1] to ARGV[1] (an envelope) with a PX of
// ARGV[2], copying into the envelope's header the version the key holds, if
// any. Only the header is read, so a big value is not copied; a key of
// another Redis type is simply replaced.
var SetKeepingVersionScript = redis.NewScript(wire.Lua(`
local t = redis.call('TYPE', KEYS[1])
if type(t) == 'table' then t = t.ok or t['ok'] end
local new = ARGV[1]
if t == 'string' then
	local ver = version_of(redis.call('GETRANGE', KEYS[1], 0, HEADER_SIZE - 1))
	if ver and ver ~= ZERO_VERSION then
		new = with_version(new, ver)
	end
end
redis.call('SET', KEYS[1], new, 'PX', ARGV[2])
return 1
`))
