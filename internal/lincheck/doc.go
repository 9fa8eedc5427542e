// Package lincheck holds no library code: its tests check the cache's ordering
// contracts on random concurrent histories with a linearizability checker
// (github.com/anishathalye/porcupine).
//
// The model. A database (an in-process map of rows, each with a version that
// every write raises) is the source of truth. Two or three Cache instances,
// each on its own go-redis client, run random Get, GetMany, Set, Delete,
// SetVersioned and DeleteKeepingVersion calls against one Redis (a single
// node, or a three-master cluster) while connections are killed on the
// server. Loads read the database, slowly at random, and some wait for the
// key's next write before returning what they read.
//
// A write is one operation from the database update to the return of its
// cache call (retried until Redis takes it, as a caller would). Writes of one
// row are ordered as under a row lock held across the cache call, except
// that writes of one kind that are safe to overlap (deletes of either sort;
// versioned sets) may overlap: a plain Set of two overlapping writers, or a
// late SetVersioned after a plain Delete, may leave an older row cached by
// the API's own contract, so the histories never contain them.
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
//
// `go test ./internal/lincheck/` runs a few seconds per topology. For a long
// run: `CACHEGUARD_LINCHECK=long go test -run Linearizable -timeout 60m
// ./internal/lincheck/` (or -lincheck.long); -lincheck.seed replays a seed's
// choice of operations (the interleaving is the scheduler's).
package lincheck
