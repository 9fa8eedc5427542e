// Package lincheck holds no library code: its tests check the cache's ordering
// contracts on random concurrent histories with a linearizability checker
// (github.com/anishathalye/porcupine).
//
// The model. A database (an in-process map of rows, each with a version that
// every write raises) is the source of truth. One Cache instance, or three,
// each on its own go-redis client, run random Get, GetMany, Set, Delete,
// SetVersioned and DeleteKeepingVersion calls against one Redis (a single
// node, or a three-master cluster) while connections are killed on the
// server. Loads read the database, slowly at random, and some wait for the
// key's next write before returning what they read.
//
// A write is one operation from the database update to the return of its
// cache call (retried until Redis takes it, as a caller would). A write of a
// row begins only when the API promises that no write still in flight can
// leave an older row cached by landing last: after a delete anything may
// begin, after a SetVersioned another SetVersioned; otherwise the writer
// waits, as under a row lock held across the cache call.
//
// The contracts checked:
//
//   - Without a local tier each key is a register: every history must be
//     linearizable, a read returning a version the database held at some
//     point of its interval, never one a write that returned before the read
//     started had replaced.
//   - With a local tier, no read that starts later than the documented bound
//     (local TTL × (1 + jitter), with WithLocalStale(0)) after a write
//     returned returns an older version.
//   - With hot-key copies (cluster, every key hot, reads spread over each key
//     and two copies), the same, with the copies' TTL as the bound.
//
// `go test ./internal/lincheck/` runs a few seconds per topology. For a long
// run: `CACHEGUARD_LINCHECK=long go test -run Linearizable -timeout 60m
// ./internal/lincheck/` (or -lincheck.long); -lincheck.seed replays a seed's
// choice of operations (the interleaving is the scheduler's).
package lincheck
