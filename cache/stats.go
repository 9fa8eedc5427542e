package cache

import "time"

// Stats is a snapshot of a Cache's counters since New.
type Stats struct {
	Hits             uint64 // a value served from Redis (or the local tier)
	LocalHits        uint64 // of Hits, served from the local tier
	Misses           uint64 // no usable entry: a fill (or a wait for one) followed
	NullHits         uint64 // a cached absence served as ErrNotFound
	FilterRejects    uint64 // answered ErrNotFound by the Bloom filter alone
	FilterErrors     uint64 // the filter failed; the read went on without it
	Loads            uint64 // loader calls
	LoadErrors       uint64 // loader calls that failed (ErrNotFound is not a failure)
	LeaseWaits       uint64 // fills that had to wait for another holder's lease
	WaitTimeouts     uint64 // waits that ran out of budget
	RejectedFills    uint64 // fills refused because the lease was gone (a Delete or Set won)
	EarlyRefresh     uint64 // background refreshes started before expiry
	Corrupt          uint64 // foreign or undecodable bytes found under a key
	TooLarge         uint64 // values not cached because of the size limit
	RedisErrors      uint64 // Redis calls that failed
	BreakerRejects   uint64 // calls the open circuit breaker kept away from Redis
	StaleServed      uint64 // local entries served past their TTL because Redis failed
	LocalFlushes     uint64 // local tier cleared because the invalidation subscription (re)started
	FallbackLoads    uint64 // direct loads while Redis was unavailable (WithFallbackLoads)
	FallbackRejected uint64 // callers refused because the fallback cap was reached
	ObserverPanics   uint64 // panics of the Observer, recovered (see Observer)
	RateLimited      uint64 // Redis reads and loads the key rate limit refused (WithKeyRateLimit); a refused fill's load also counts in LoadErrors
	RateLimitedLocal uint64 // of the Gets they belonged to, answered from the local tier instead
	TagInvalidations uint64 // tags invalidated by InvalidateTags on this instance
	TagMisses        uint64 // tagged entries read from Redis and found invalidated by a tag (a miss)
	TagReads         uint64 // reads of tag times from Redis (one MGET each)
	SoftTimeouts     uint64 // Gets answered with a stale value because the reload outlasted WithSoftLoadTimeout
	LoadTimeouts     uint64 // loader calls stopped by WithLoadTimeout
	TTLZero          uint64 // values not cached because Values.TTL chose 0
	TTLInvalid       uint64 // values not cached because Values.TTL returned a negative or too long TTL, or panicked (each reported)
	Clears           uint64 // Clear calls that moved the cache to a new generation
	Generations      uint64 // moves to a newer generation: Clears here and those heard from other instances
	CopyReads        uint64 // of Hits, read from a hot key's copy on another master (WithHotKeyCopies)
	CopySeeds        uint64 // hot-key copies written after a read found its copy missing
	ReplicaWaits     uint64 // writes that waited for the replicas (WithReplicaReads)
	ReplicaLags      uint64 // of those, writes the replicas did not all acknowledge in time (ErrReplicaLag)

	// Breaker is the circuit breaker's state now (BreakerClosed without
	// WithCircuitBreaker).
	Breaker BreakerState

	// Invalidation across instances (docs/cache.md, "Staleness of the local tier").
	InvalidationsSent        uint64        // messages this instance published
	InvalidationSendFailures uint64        // messages given up after every retry
	InvalidationsReceived    uint64        // messages from other instances applied
	InvalidationGaps         uint64        // gaps seen in a publisher's sequence (each cleared the local tier)
	InvalidationsLost        uint64        // messages known lost, summed over the gaps
	InvalidationDecodeErrors uint64        // messages that did not decode (each cleared the local tier)
	SubscriptionDowns        uint64        // subscription failures: errors, missed health replies, server unsubscribes
	SubscriptionRefusals     uint64        // of SubscriptionDowns, refused by the Redis user's ACL (ErrSubscriptionRefused)
	InvalidationLag          time.Duration // publish-to-apply delay of the latest message (publisher's clock against ours)
	InvalidationLagMax       time.Duration // the largest such delay seen

	// Tracking (WithTracking): Redis's own invalidations.
	TrackingInvalidations uint64 // keys of this prefix Redis said changed (each dropped from the local tier)
	TrackingFlushes       uint64 // flushes Redis reported (each cleared the local tier)
	TrackingDowns         uint64 // times tracking was lost on a master (its connection gone or replaced, arming failed, a new master not armed yet)
}

// Stats returns a snapshot of the counters.
func (c *Cache[V]) Stats() Stats {
	r := c.rec
	s := Stats{
		Hits:             r.Hits.Load() + r.LocalHits.Load(),
		LocalHits:        r.LocalHits.Load(),
		Misses:           r.Misses.Load(),
		NullHits:         r.NullHits.Load(),
		FilterRejects:    r.FilterRejects.Load(),
		FilterErrors:     r.FilterErrors.Load(),
		Loads:            r.Loads.Load(),
		LoadErrors:       r.LoadErrors.Load(),
		LeaseWaits:       r.LeaseWaits.Load(),
		WaitTimeouts:     r.WaitTimeouts.Load(),
		RejectedFills:    r.RejectedFills.Load(),
		EarlyRefresh:     r.EarlyRefresh.Load(),
		Corrupt:          r.Corrupt.Load(),
		TooLarge:         r.TooLarge.Load(),
		RedisErrors:      r.RedisErrors.Load(),
		BreakerRejects:   r.BreakerRejects.Load(),
		StaleServed:      r.StaleServed.Load(),
		LocalFlushes:     r.LocalFlushes.Load(),
		FallbackLoads:    r.FallbackLoads.Load(),
		FallbackRejected: r.FallbackRejected.Load(),
		ObserverPanics:   r.ObserverPanics.Load(),
		RateLimited:      r.RateLimited.Load(),
		RateLimitedLocal: r.RateLimitedLocal.Load(),
		TagInvalidations: r.TagInvalidations.Load(),
		TagMisses:        r.TagMisses.Load(),
		TagReads:         r.TagReads.Load(),
		SoftTimeouts:     r.SoftTimeouts.Load(),
		LoadTimeouts:     r.LoadTimeouts.Load(),
		TTLZero:          r.TTLZero.Load(),
		TTLInvalid:       r.TTLInvalid.Load(),
		Clears:           r.Clears.Load(),
		Generations:      r.Generations.Load(),
		CopyReads:        r.CopyReads.Load(),
		CopySeeds:        r.CopySeeds.Load(),
		ReplicaWaits:     r.ReplicaWaits.Load(),
		ReplicaLags:      r.ReplicaLags.Load(),
		Breaker:          c.breakerState(),

		InvalidationsSent:        c.bus.Sent.Load(),
		InvalidationSendFailures: c.bus.SendFailures.Load(),
		InvalidationsReceived:    c.bus.Received.Load(),
		InvalidationGaps:         c.bus.Gaps.Load(),
		InvalidationsLost:        c.bus.Lost.Load(),
		InvalidationDecodeErrors: c.bus.DecodeErrors.Load(),
		SubscriptionDowns:        c.bus.Downs.Load(),
		SubscriptionRefusals:     c.bus.Refused.Load(),
	}
	s.InvalidationLag, s.InvalidationLagMax = c.bus.Lag()
	s.TrackingInvalidations, s.TrackingFlushes, s.TrackingDowns = c.tier.TrackingStats()
	return s
}
