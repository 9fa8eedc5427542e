package wire

import (
	"fmt"
	"strings"
)

// Lua is the prelude of every script that reads a cache key's value: local
// constants and functions generated from this package's constants, so that
// no script spells a length, an offset or a magic byte itself. Lua strings
// are 1-based: a Go offset o is Lua position o+1. Every function takes what
// GET returns: a string, or false for a missing key.
//
//	HEADER_SIZE                  envelope header length
//	FLAGS_AT                     position of the flags byte
//	NONCE_AT, NONCE_END          first and last positions of the fill nonce
//	FLAG_NULL, FLAG_STALE        flags
//	FLAG_REFRESHING              flag
//	ZERO_VERSION                 the version of an unversioned entry
//	is_envelope(v)               v starts with an envelope header
//	envelope_flags(v)            the flags byte of an envelope
//	envelope_version(v)          the 8 version bytes of an envelope
//	next_nonce(v)                the envelope's fill nonce plus one (modulo 2^32), as bytes
//	with_version(env, ver)       env with its version bytes replaced by ver
//	placeholder(v)               base, kept version (or nil), marked; nil if v is not a placeholder
//	owns(v, base)                mine, marked: v is the placeholder base (any shape)
//	is_placeholder(v)            v is a placeholder of any shape
//	placeholder_version(v)       the version a placeholder kept, or nil
//	with_kept_version(ph, v)     base placeholder ph keeping the non-zero version v carries (version_of)
//	tombstone(ver)               a version tombstone of ver
//	tombstone_version(v)         the version of a version tombstone, or nil
//	version_of(v)                the version an envelope, tombstone or placeholder carries, or nil
//	version_newer(a, b)          version a is above version b (unsigned, byte by byte)
//	has_flag(f, bit)             flag arithmetic (not every Lua Redis embeds has the bit library)
var Lua = buildLua()

func luaByte(b byte) string { return fmt.Sprintf(`\%d`, b) }

func buildLua() string {
	r := strings.NewReplacer(
		"$HEADER", fmt.Sprint(HeaderSize),
		"$FORMAT_AT", fmt.Sprint(FormatOffset+1),
		"$FORMAT", fmt.Sprint(EnvelopeFormat),
		"$FLAGS_AT", fmt.Sprint(FlagsOffset+1),
		"$VERSION_AT", fmt.Sprint(VersionOffset+1),
		"$VERSION_END", fmt.Sprint(VersionOffset+VersionSize),
		"$NONCE_AT", fmt.Sprint(NonceOffset+1),
		"$NONCE_END", fmt.Sprint(NonceOffset+NonceSize),
		"$VERSION_SIZE", fmt.Sprint(VersionSize),
		"$FLAG_NULL", fmt.Sprint(FlagNull),
		"$FLAG_STALE", fmt.Sprint(FlagStale),
		"$FLAG_REFRESHING", fmt.Sprint(FlagRefreshing),
		"$MAGIC_ENVELOPE", fmt.Sprint(MagicEnvelope),
		"$MAGIC_LEASE", fmt.Sprint(MagicLease),
		"$MAGIC_TOMBSTONE", fmt.Sprint(MagicTombstone),
		"$MAGIC", fmt.Sprint(Magic),
		"$TOMBSTONE_PREFIX", luaByte(Magic)+luaByte(MagicTombstone),
		"$TOMBSTONE_SIZE", fmt.Sprint(TombstoneSize),
		"$PH_KEPT_MARKED", fmt.Sprint(PlaceholderKeptMarkedSize),
		"$PH_KEPT", fmt.Sprint(PlaceholderKeptSize),
		"$PH_MARKED", fmt.Sprint(PlaceholderMarkedSize),
		"$PH", fmt.Sprint(PlaceholderSize),
		"$WAIT_MARK", luaByte(WaitMark),
	)
	return r.Replace(luaTemplate)
}

// luaTemplate is Lua with $NAMES for the constants (longer names first in
// the replacer, so that no name is cut by a shorter one).
const luaTemplate = `
local HEADER_SIZE = $HEADER
local FLAGS_AT, NONCE_AT, NONCE_END = $FLAGS_AT, $NONCE_AT, $NONCE_END
local FLAG_NULL, FLAG_STALE, FLAG_REFRESHING = $FLAG_NULL, $FLAG_STALE, $FLAG_REFRESHING
local ZERO_VERSION = string.rep('\0', $VERSION_SIZE)
local WAIT_MARK = '$WAIT_MARK'
local function has_flag(f, bit) return math.floor(f / bit) % 2 == 1 end
local function is_envelope(v)
	return type(v) == 'string' and #v >= $HEADER and string.byte(v, 1) == $MAGIC and string.byte(v, 2) == $MAGIC_ENVELOPE and string.byte(v, $FORMAT_AT) == $FORMAT
end
local function envelope_flags(v) return string.byte(v, FLAGS_AT) end
local function envelope_version(v) return string.sub(v, $VERSION_AT, $VERSION_END) end
local function next_nonce(v)
	local n = 0
	for i = NONCE_AT, NONCE_END do
		n = n * 256 + string.byte(v, i)
	end
	n = n + 1
	local nonce = ''
	for i = NONCE_AT, NONCE_END do
		nonce = string.char(n % 256) .. nonce
		n = math.floor(n / 256)
	end
	return nonce
end
local function with_version(env, ver)
	return string.sub(env, 1, $VERSION_AT - 1) .. ver .. string.sub(env, $VERSION_END + 1)
end
local function placeholder(v)
	if type(v) ~= 'string' or #v < $PH or string.byte(v, 1) ~= $MAGIC or string.byte(v, 2) ~= $MAGIC_LEASE then
		return nil
	end
	local n = #v
	local kept, marked = nil, false
	if n == $PH_KEPT or n == $PH_KEPT_MARKED then
		kept = string.sub(v, $PH + 1, $PH_KEPT)
	elseif n ~= $PH and n ~= $PH_MARKED then
		return nil
	end
	if n == $PH_MARKED or n == $PH_KEPT_MARKED then
		if string.sub(v, n) ~= WAIT_MARK then
			return nil
		end
		marked = true
	end
	return string.sub(v, 1, $PH), kept, marked
end
local function is_placeholder(v) return placeholder(v) ~= nil end
local function placeholder_version(v)
	local base, kept = placeholder(v)
	return kept
end
local function owns(v, base)
	if not base or #base ~= $PH then
		return false, false
	end
	local b, kept, marked = placeholder(v)
	if b ~= base then
		return false, false
	end
	return true, marked
end
local function tombstone(ver) return '$TOMBSTONE_PREFIX' .. ver end
local function tombstone_version(v)
	if type(v) == 'string' and #v == $TOMBSTONE_SIZE and string.byte(v, 1) == $MAGIC and string.byte(v, 2) == $MAGIC_TOMBSTONE then
		return string.sub(v, 3)
	end
	return nil
end
local function version_newer(a, b)
	for i = 1, $VERSION_SIZE do
		local x, y = string.byte(a, i), string.byte(b, i)
		if x ~= y then
			return x > y
		end
	end
	return false
end
local function version_of(v)
	if is_envelope(v) then
		return envelope_version(v)
	end
	return tombstone_version(v) or placeholder_version(v)
end
local function with_kept_version(ph, v)
	local ver = version_of(v)
	if ver and ver ~= ZERO_VERSION and #ph == $PH then
		return ph .. ver
	end
	return ph
end
`
