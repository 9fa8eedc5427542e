// Package generation names a cache's keys in Redis and keeps the
// generation they are named in: Clear moves every instance to a new one in
// O(1) (clear.go), and each instance syncs with the generation Redis holds,
// making a new one when Redis forgot it (sync.go).
//
// Every key the cache reads and writes is derived by Key from the cache's
// generation (wire.EntryKey: prefix + key in generation 0, so a cache never
// cleared keeps its layout). The entries of older generations are never
// read again and expire by their TTL; nothing scans.
package generation

import (
	"sync/atomic"

	"github.com/cacheguard/cacheguard/cache/internal/hook"
	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// Keys is a cache's key naming in its current generation.
type Keys struct {
	prefix string
	gen    atomic.Uint64
	// onMove runs after each move to a newer generation (the local tier
	// is cleared then); set before the cache is used.
	onMove func()
	rec    *telemetry.Recorder
	hooks  *hook.Set
}

// NewKeys returns the naming of prefix's keys, in generation 0 until told
// otherwise; onMove (nil: none) runs after each move.
func NewKeys(prefix string, onMove func(), rec *telemetry.Recorder, hooks *hook.Set) *Keys {
	return &Keys{prefix: prefix, onMove: onMove, rec: rec, hooks: hooks}
}

// Prefix is the cache's key prefix.
func (k *Keys) Prefix() string { return k.prefix }

// Gen is the current generation.
func (k *Keys) Gen() uint64 { return k.gen.Load() }

// Key is the Redis key of key's entry in the current generation.
func (k *Keys) Key(key string) string {
	_, rkey := k.GenKey(key)
	return rkey
}

// GenKey is Key with the generation it was built in.
func (k *Keys) GenKey(key string) (gen uint64, rkey string) {
	gen = k.gen.Load()
	return gen, wire.EntryKey(k.prefix, gen, key)
}

// Keys is Key of each of keys.
func (k *Keys) Keys(keys []string) []string {
	out := make([]string, len(keys))
	for i, key := range keys {
		out[i] = k.Key(key)
	}
	return out
}

// Parse returns the user key of rkey if it is one of this cache's keys in
// the current generation.
func (k *Keys) Parse(rkey string) (string, bool) {
	g, key, ok := wire.ParseEntryKey(k.prefix, rkey)
	return key, ok && g == k.gen.Load()
}

// Move moves the cache to generation g if it is newer; it reports whether
// it moved.
func (k *Keys) Move(g uint64) bool {
	for {
		cur := k.gen.Load()
		if g <= cur {
			return false
		}
		if k.gen.CompareAndSwap(cur, g) {
			break
		}
	}
	k.rec.Generations.Add(1)
	if k.onMove != nil {
		k.onMove()
	}
	if k.hooks != nil && k.hooks.OnGeneration != nil {
		k.hooks.OnGeneration(g)
	}
	return true
}

// Announced applies the generations announced among an invalidation
// message's keys.
func (k *Keys) Announced(keys []string) {
	for _, key := range keys {
		if g, ok := wire.ParseGenerationAnnouncement(key); ok {
			k.Move(g)
		}
	}
}
