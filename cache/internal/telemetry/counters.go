// Package telemetry is the one seam through which the cache's components
// tell what happened: the counters behind cache.Stats, the errors no
// caller sees (logged, aggregated by kind, and handed to the error
// handler), and the marks a call under an Observer collects on its way
// (which tier answered, a lease wait, a refresh). Package cache turns the
// counters into Stats and the marks into the Observer's GetInfo; the otel
// module reads both from there.
package telemetry

import "sync/atomic"

// Counters are the live counters behind cache.Stats (each field is the
// Stats field of the same name). Hits counts Redis hits only, so that a
// local hit costs one atomic add; Stats adds LocalHits to it.
type Counters struct {
	Hits, LocalHits, Misses, NullHits, FilterRejects, FilterErrors,
	Loads, LoadErrors, LeaseWaits, WaitTimeouts, RejectedFills,
	EarlyRefresh, Corrupt, TooLarge, RedisErrors,
	StaleServed, LocalFlushes, FallbackLoads, FallbackRejected,
	BreakerRejects, ObserverPanics, RateLimited, RateLimitedLocal,
	TagInvalidations, TagMisses, TagReads,
	SoftTimeouts, LoadTimeouts, TTLZero, TTLInvalid, Clears, Generations,
	CopyReads, CopySeeds, ReplicaWaits, ReplicaLags atomic.Uint64
}
