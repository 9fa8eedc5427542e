// Package msgpack is a cache.Codec that encodes values with MessagePack
// (github.com/vmihailenco/msgpack/v5).
//
// It is a module of its own so that cacheguard's core module does not depend
// on a MessagePack library. On a typical repository row it decodes in about a
// third of the time encoding/json takes, with fewer allocations and 10 to
// 15 % fewer bytes (the codec benchmark listed under "Other measurements" in
// benchmarks/RESULTS.md); the price is values that redis-cli no longer shows
// as text.
//
//	c, err := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"), cache.WithCodec(msgpack.Codec{}))
//
// Struct fields are named by their `msgpack` tags, falling back to `json`
// tags (SetCustomStructTag) so that types already tagged for JSON keep their
// field names; time.Time values keep their location's offset, not its name.
// Entries written by one codec are not readable by another: switching a
// cache's codec goes with a new key prefix (WithPrefix), or the old entries
// read as undecodable and are reloaded.
package msgpack
