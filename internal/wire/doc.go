// Package wire owns every byte layout and key layout cacheguard writes to
// Redis, and the Lua that reads those bytes.
//
// The model: a cache key holds one string, which is exactly one of the
// shapes listed by Shapes (an envelope, one of four lease placeholder shapes,
// a version tombstone) or foreign bytes. Go code classifies a value with
// Classify; scripts do the same with the functions of Lua, generated from the
// constants of this package, so that a script and the Go that runs it never
// disagree about a length or an offset (LockLua and BloomLua do the same for
// the lock hashes and the Bloom filter's configuration). Keys are built and
// parsed by the functions of keys.go (cache entries and channels, locks, the
// write path's queues, stock buckets and admission budgets, Bloom filters,
// hot-key fleet windows, key rate limits), so that the writers and
// `cacheguard inspect` read one layout. Layouts lists every layout with an
// example key and KeyLayout names a key by its name and type; tests hold
// the list complete and inspect to it. The invalidation message that local
// tiers exchange is here too (invalidation.go).
//
// The package has no dependency beyond the standard library: every package
// that talks to Redis may import it.
package wire
