// Package bloom keeps requests for keys that exist nowhere away from Redis and
// the database (cache penetration). A Bloom filter holds every key that exists;
// when it answers "absent" the key is certainly absent and the read can stop
// there. It may answer "present" for an absent key at a configured rate (the
// false-positive rate); the cache's null entries catch those.
//
// Three implementations satisfy [Filter]:
//
//   - [Fleet] is the one for a service of several instances: the bitmap
//     lives in Redis and each process tests a copy of it in its own memory
//     (a Local filter's speed); every Add is told to every instance through
//     the client's shared pub/sub connection, and an instance that cannot
//     prove it heard every add answers "maybe" until it has read the bitmap
//     again, so a key added anywhere is found everywhere within the health
//     bound (WithHealthCheck). An instance that starts while the bitmap
//     exists reads it and scans nothing.
//   - [Local] lives in process memory (github.com/bits-and-blooms/bloom/v3). A
//     test costs tens of nanoseconds and no network, but each process has its
//     own copy, so a row inserted through one process is invisible to the
//     others until they add it too or rebuild: for a one-process program.
//   - [Redis] keeps the bitmap in Redis, shared by every process: a key added
//     through one instance is seen by all of them at once. A test or an add is
//     one round trip running one Lua script.
//
// Both place a key at the same bits (bloom.Locations(key, k) mod m), so a Local
// and a Redis filter built from the same keys hold identical bitmaps.
//
// # Layout in Redis
//
// A filter named N is five keys under one hash tag, so every script touches a
// single Redis Cluster slot:
//
//	{N}:cfg    "m=… k=… v=… ready=0|1": bits, hash functions, location scheme
//	{N}:bits   the bitmap, a string of m bits (bit i is SETBIT offset i)
//	{N}:next   the bitmap a rebuild is uploading
//	{N}:delta  the bits of keys added while a rebuild runs
//	{N}:build  the rebuild lease: a token with an expiry
//
// Every script compares m, k and v with the caller's, so an instance sized
// differently is refused with [ErrMismatch] instead of reading bits it did not
// write. Both m and k come from the expected number of keys and the
// false-positive rate; a filter may not exceed [MaxBits] (2^32 bits, Redis'
// 512 MiB string limit).
//
// # Lifecycle
//
// A new filter is not ready: it knows no keys yet, so it would reject
// everything. Until it is ready, MayContain answers true for every key (safe
// mode) and the read path runs as if there were no filter. Rebuild reads every
// existing key from a source (an iterator, typically over SELECT id FROM …),
// fills a fresh filter, swaps it in atomically and marks the filter ready. The
// first Rebuild is the warm-up; later ones shed the bits of deleted rows, which
// a Bloom filter cannot remove, so its false-positive rate drifts up as rows
// are deleted.
//
// Add must be called on every insert path, after the row is committed.
// A key that was not added is reported absent and its row is invisible to
// readers until the next rebuild. Adds made while a rebuild runs land in both
// the serving and the new filter, so they survive the swap.
//
// For the Redis filter readiness is shared: it lives in {N}:cfg and is checked
// by the same script that reads the bits. If Redis loses the filter (restart
// without persistence, eviction), the filter drops back to safe mode until the
// next Rebuild instead of rejecting every key.
package bloom
