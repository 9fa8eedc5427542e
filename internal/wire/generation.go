package wire

import (
	"strconv"
	"strings"
)

// Cache generations (Cache.Clear). A cache's entries live under
//
//	prefix + key                                                       generation 0 (never cleared)
//	prefix + GenerationMark + <generation, decimal> + GenerationMark + key   after a Clear
//
// and GenerationKey(prefix) holds the cache's generation, an integer
// (decimal) that only grows: a new generation is above the one under the
// key and at least the Redis server's clock in microseconds
// (GenerationFloorLua), so it is above every generation used before even
// after the key was lost (an INCR, as earlier versions made them, stays
// above them too). Neither the mark nor the digits contain a
// brace, so a hash tag in the user's key ("{user42}:cart") still decides the
// slot on a Redis Cluster, as it does in generation 0. User keys must not
// begin with GenerationMark: such a key of generation 0 could read as
// another key of a later generation. An invalidation message announces a new
// generation with a key GenerationAnnouncement builds (no user key can be
// taken for it).
//
// Every generation key carries one hash tag, so that on a Redis Cluster
// they all share one slot: one script reads the generations of every cache
// of a process (the sync's cost does not grow with the caches).
const (
	GenerationKeyPrefix = "cacheguard:{generation}:"
	GenerationMark      = "\xff"
)

// GenerationFloorLua defines the Lua function generation_floor(): the
// Redis server's clock (TIME) in microseconds, the least generation a
// script makes. It stays below 2^53, where Lua numbers are exact, until the
// year 2255.
const GenerationFloorLua = `
local function generation_floor()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
`

// GenerationKey is the key holding the generation of the cache of prefix.
func GenerationKey(prefix string) string { return GenerationKeyPrefix + prefix }

// EntryKey is the Redis key of key's entry in generation gen of the cache
// of prefix.
func EntryKey(prefix string, gen uint64, key string) string {
	if gen == 0 {
		return prefix + key
	}
	return prefix + GenerationMark + strconv.FormatUint(gen, 10) + GenerationMark + key
}

// ParseEntryKey is EntryKey's inverse: the generation and user key of rkey,
// a Redis key of the cache of prefix; ok is false for a key outside it.
func ParseEntryKey(prefix, rkey string) (gen uint64, key string, ok bool) {
	rest, ok := strings.CutPrefix(rkey, prefix)
	if !ok {
		return 0, "", false
	}
	marked, ok := strings.CutPrefix(rest, GenerationMark)
	if !ok {
		return 0, rest, true
	}
	digits, key, ok := strings.Cut(marked, GenerationMark)
	if !ok {
		return 0, "", false
	}
	gen, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || gen == 0 {
		return 0, "", false
	}
	return gen, key, true
}

// ReservedKey reports a user key that EntryKey cannot tell from a key of
// another generation.
func ReservedKey(key string) bool { return strings.HasPrefix(key, GenerationMark) }

// GenerationAnnouncement is the key an invalidation message carries to
// announce generation gen.
func GenerationAnnouncement(gen uint64) string {
	return GenerationMark + "generation:" + strconv.FormatUint(gen, 10)
}

// ParseGenerationAnnouncement reads GenerationAnnouncement's key.
func ParseGenerationAnnouncement(key string) (uint64, bool) {
	rest, ok := strings.CutPrefix(key, GenerationMark+"generation:")
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseUint(rest, 10, 64)
	return g, err == nil
}
