package wire

import (
	"fmt"
	"regexp"
	"strings"
)

// Lua returns body preceded by the prelude definitions it uses: local
// constants and functions generated from this package's constants, so that
// no script spells a length, an offset or a magic byte itself. Only what the
// body names (and what those definitions name in turn) is included: Redis
// runs a script's whole text on every call, and defining the functions a
// script does not call cost as much server time as the work of the fill
// script itself (measured on Redis 7.0: 23 µs a call with the whole prelude,
// 14 µs without). Lua strings are 1-based: a Go offset o is Lua position
// o+1. Every function takes what GET returns: a string, or false for a
// missing key.
//
//	HEADER_SIZE                  envelope header length
//	FLAGS_AT                     position of the flags byte
//	NONCE_AT, NONCE_END          first and last positions of the fill nonce
//	FLAG_NULL, FLAG_STALE        flags
//	FLAG_REFRESHING              flag
//	ZERO_VERSION                 the version of an unversioned entry
//	WAIT_MARK                    the byte that marks a placeholder as waited for
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
func Lua(body string) string {
	var b strings.Builder
	for _, d := range preludeUsedBy(body) {
		b.WriteString(d.code)
	}
	b.WriteString(body)
	return b.String()
}

// luaDef is one definition of the prelude: the name it defines and its
// code, names replaced by their constants.
type luaDef struct{ name, code string }

// prelude is every definition, in the order a script may define them (each
// after those it names).
var prelude = buildPrelude()

var luaIdent = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// preludeUsedBy returns the definitions body names, directly or through
// other definitions, in prelude order.
func preludeUsedBy(body string) []luaDef {
	used := map[string]bool{}
	var mark func(code string)
	mark = func(code string) {
		for _, id := range luaIdent.FindAllString(code, -1) {
			if used[id] {
				continue
			}
			for _, d := range prelude {
				if d.name == id {
					used[id] = true
					mark(d.code)
					break
				}
			}
		}
	}
	mark(body)
	var defs []luaDef
	for _, d := range prelude {
		if used[d.name] {
			defs = append(defs, d)
		}
	}
	return defs
}

func luaByte(b byte) string { return fmt.Sprintf(`\%d`, b) }

func buildPrelude() []luaDef {
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
	code := r.Replace(luaTemplate)
	var defs []luaDef
	for _, def := range strings.SplitAfter(code, "\n--\n") {
		def = strings.TrimPrefix(strings.TrimSuffix(def, "--\n"), "\n")
		if def == "" {
			continue
		}
		name := strings.TrimPrefix(def, "local function ")
		name = strings.TrimPrefix(name, "local ")
		defs = append(defs, luaDef{name: luaIdent.FindString(name), code: def})
	}
	return defs
}

// luaTemplate is the prelude with $NAMES for the constants (longer names
// first in the replacer, so that no name is cut by a shorter one), one
// definition between each pair of "--" lines.
const luaTemplate = `
local HEADER_SIZE = $HEADER
--
local FLAGS_AT = $FLAGS_AT
--
local NONCE_AT = $NONCE_AT
--
local NONCE_END = $NONCE_END
--
local FLAG_NULL = $FLAG_NULL
--
local FLAG_STALE = $FLAG_STALE
--
local FLAG_REFRESHING = $FLAG_REFRESHING
--
local ZERO_VERSION = string.rep('\0', $VERSION_SIZE)
--
local WAIT_MARK = '$WAIT_MARK'
--
local function has_flag(f, bit) return math.floor(f / bit) % 2 == 1 end
--
local function is_envelope(v)
	return type(v) == 'string' and #v >= $HEADER and string.byte(v, 1) == $MAGIC and string.byte(v, 2) == $MAGIC_ENVELOPE and string.byte(v, $FORMAT_AT) == $FORMAT
end
--
local function envelope_flags(v) return string.byte(v, FLAGS_AT) end
--
local function envelope_version(v) return string.sub(v, $VERSION_AT, $VERSION_END) end
--
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
--
local function with_version(env, ver)
	return string.sub(env, 1, $VERSION_AT - 1) .. ver .. string.sub(env, $VERSION_END + 1)
end
--
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
--
local function is_placeholder(v) return placeholder(v) ~= nil end
--
local function placeholder_version(v)
	local base, kept = placeholder(v)
	return kept
end
--
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
--
local function tombstone(ver) return '$TOMBSTONE_PREFIX' .. ver end
--
local function tombstone_version(v)
	if type(v) == 'string' and #v == $TOMBSTONE_SIZE and string.byte(v, 1) == $MAGIC and string.byte(v, 2) == $MAGIC_TOMBSTONE then
		return string.sub(v, 3)
	end
	return nil
end
--
local function version_newer(a, b)
	for i = 1, $VERSION_SIZE do
		local x, y = string.byte(a, i), string.byte(b, i)
		if x ~= y then
			return x > y
		end
	end
	return false
end
--
local function version_of(v)
	if is_envelope(v) then
		return envelope_version(v)
	end
	return tombstone_version(v) or placeholder_version(v)
end
--
local function with_kept_version(ph, v)
	local ver = version_of(v)
	if ver and ver ~= ZERO_VERSION and #ph == $PH then
		return ph .. ver
	end
	return ph
end
--
`
