// Package hotkey finds the keys that take a large share of traffic right now.
//
// A Detector is fed every access with Record and answers IsHot. It is meant to
// sit on a cache's read path, so Record is cheap (tens of nanoseconds, no
// allocation in the steady state) and IsHot is a lock-free map lookup.
//
// # Model
//
// Time is cut into ticks; a window is a whole number of ticks. Keys are spread
// over shards by hash, each with its own mutex, so concurrent Records on
// different keys rarely meet. Each shard holds
//
//   - a HeavyKeeper sketch (Yang et al., "HeavyKeeper: An Accurate Algorithm
//     for Finding Top-k Elephant Flows", 2018): a few rows of buckets holding a
//     fingerprint and a count. A key that finds its own fingerprint adds one; a
//     key that finds another's decays that count with a probability that falls
//     exponentially with the count, so mice rarely displace elephants and the
//     sketch's estimates are almost never too high. At every tick all counts are
//     scaled down so that the sketch remembers about one window of traffic.
//   - a small set of candidates, the keys whose estimate beat the smallest
//     candidate. A candidate is counted exactly from then on, in a ring with one
//     slot per tick, so its count is the number of accesses in the sliding
//     window (plus the sketch's estimate it was admitted with, until that slot
//     leaves the window). Candidates bypass the sketch; when one is dropped its
//     buckets are lowered to its exact count, so that traffic which has left
//     the window cannot bring it back.
//
// A count covers the tick in progress and the whole ticks of one window
// before it, so right after a tick it covers exactly one window.
//
// At each tick the slots that left the window are dropped, and the candidates
// of all shards are merged: the k largest that meet the thresholds (a minimum
// count per window and/or a minimum share of all accesses in the window) form
// the hot set. The hot set is published as an immutable snapshot, so IsHot and
// Top never take a lock. A key does not wait for a tick to become hot: the
// Record that brings a candidate's count to the minimum count (and to the
// minimum share of the last tick's window) promotes it at once, into a small
// per-shard set that IsHot consults after the snapshot and the next tick takes
// over (see early.go). A key that stops being accessed falls below the
// thresholds as its slots leave the window, so it is demoted at most one
// window after it cooled. Promotions and demotions are reported to an
// optional callback, from the goroutine that ticks, never from Record; a
// promotion's event carries the time it happened. A tick costs one pass over
// the candidates plus work in proportion to the changes it reports.
//
// # Time
//
// By default New starts one goroutine that calls Tick every tick; Close stops
// it. Once a tick leaves the detector empty (no access within a whole window,
// nothing hot, nothing left to decay) the goroutine stops ticking until the
// next Record, so an idle detector costs no CPU; the accesses that wake it
// count as they would have with the ticker running. With WithClock the caller owns time: no goroutine is started and the
// caller calls Tick, which retires as many ticks as the clock says have passed.
// Tests use this to drive a detector through minutes of traffic without
// sleeping.
//
// # Fleet
//
// With WithFleet, detectors of one group add their counts up in Redis once
// per window and each promotes the keys hot across the group as well as its
// own (fleet.go). The fleet's windows are numbered by the Redis server's
// clock, read at each exchange, so instances whose clocks disagree still add
// to and read the same windows (fleetclock.go); with WithClock, by the given
// clock.
package hotkey
