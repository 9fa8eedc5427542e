package otel

// Metric names, stable across releases. Counters are cumulative since the
// cache (or queue) was created.
const (
	// Cache counters (RegisterCache), each with the attribute cacheguard.cache.
	MetricHits                   = "cacheguard.cache.hits"      // attribute tier: local | redis
	MetricMisses                 = "cacheguard.cache.misses"    // no usable entry: a fill (or a wait for one) followed
	MetricNullHits               = "cacheguard.cache.null_hits" // cached absences served as not found
	MetricFilterRejects          = "cacheguard.cache.filter.rejects"
	MetricFilterErrors           = "cacheguard.cache.filter.errors"
	MetricLoads                  = "cacheguard.cache.loads" // loader calls; attribute outcome: ok | error
	MetricFallbackLoads          = "cacheguard.cache.fallback.loads"
	MetricFallbackRejects        = "cacheguard.cache.fallback.rejects"
	MetricLeaseWaits             = "cacheguard.cache.lease.waits"
	MetricWaitTimeouts           = "cacheguard.cache.lease.wait_timeouts"
	MetricFillRefusals           = "cacheguard.cache.fill.refusals"
	MetricEarlyRefreshes         = "cacheguard.cache.early_refreshes"
	MetricCorrupt                = "cacheguard.cache.corrupt"
	MetricTooLarge               = "cacheguard.cache.too_large"
	MetricRedisErrors            = "cacheguard.cache.redis.errors"
	MetricBreakerRejects         = "cacheguard.cache.breaker.rejects"
	MetricStaleServed            = "cacheguard.cache.stale_served"
	MetricLocalFlushes           = "cacheguard.cache.local.flushes"
	MetricInvalidations          = "cacheguard.cache.invalidations" // attribute direction: sent | received
	MetricInvalidationFailures   = "cacheguard.cache.invalidation.send_failures"
	MetricInvalidationGaps       = "cacheguard.cache.invalidation.gaps"
	MetricInvalidationsLost      = "cacheguard.cache.invalidation.lost"
	MetricInvalidationDecodeErrs = "cacheguard.cache.invalidation.decode_errors"
	MetricSubscriptionDowns      = "cacheguard.cache.invalidation.subscription_downs"
	MetricSubscriptionRefusals   = "cacheguard.cache.invalidation.subscription_refusals" // of the downs, refused by the Redis ACL
	MetricObserverPanics         = "cacheguard.cache.observer.panics"
	MetricTagInvalidations       = "cacheguard.cache.tag.invalidations"      // tags invalidated by InvalidateTags
	MetricTagMisses              = "cacheguard.cache.tag.misses"             // entries read and found invalidated by a tag
	MetricTagReads               = "cacheguard.cache.tag.reads"              // reads of tag invalidation times from Redis
	MetricTrackingInvalidations  = "cacheguard.cache.tracking.invalidations" // keys Redis said changed (WithTracking)
	MetricTrackingFlushes        = "cacheguard.cache.tracking.flushes"
	MetricTrackingDowns          = "cacheguard.cache.tracking.downs"
	MetricSoftTimeouts           = "cacheguard.cache.load.soft_timeouts"  // Gets answered stale past WithSoftLoadTimeout
	MetricLoadTimeouts           = "cacheguard.cache.load.timeouts"       // loads stopped by WithLoadTimeout
	MetricTTLNotCached           = "cacheguard.cache.ttl_func.not_cached" // values Values.TTL kept out; attribute reason: zero | invalid
	MetricRateLimited            = "cacheguard.cache.rate_limited"        // Redis reads and loads the key rate limit refused (WithKeyRateLimit)
	MetricRateLimitedLocal       = "cacheguard.cache.rate_limited.local"  // of their Gets, answered from the local tier instead
	MetricClears                 = "cacheguard.cache.clears"              // Clear calls on this instance
	MetricGenerations            = "cacheguard.cache.generations"         // moves to a newer generation (Clears here and heard)
	MetricCopyReads              = "cacheguard.cache.copy.reads"          // of the hits, read from a hot key's copy (WithHotKeyCopies)
	MetricCopySeeds              = "cacheguard.cache.copy.seeds"          // hot-key copies written after a read found one missing
	MetricReplicaWaits           = "cacheguard.cache.replica.waits"       // writes that waited for the replicas (WithReplicaReads)
	MetricReplicaLags            = "cacheguard.cache.replica.lags"        // of those, not acknowledged in time (ErrReplicaLag)
	// Gauge: the circuit breaker's state, 0 closed, 1 half-open, 2 open.
	MetricBreakerState = "cacheguard.cache.breaker.state"
	// Gauges, in seconds.
	MetricInvalidationLag    = "cacheguard.cache.invalidation.lag"
	MetricInvalidationLagMax = "cacheguard.cache.invalidation.lag_max"

	// Histograms recorded by the Observer, in seconds.
	MetricGetDuration  = "cacheguard.cache.get.duration"  // attributes op: Get | GetMany, tier
	MetricLoadDuration = "cacheguard.cache.load.duration" // attribute outcome: ok | not_found | error
	// Time a fill waited for another holder's lease (another process's
	// fill), from the first refusal to the attempt that found the value.
	MetricLeaseWaitDuration = "cacheguard.cache.lease.wait.duration"
	// Encoded entry sizes in bytes, attribute op: read | write.
	MetricValueSize = "cacheguard.cache.value.size"

	// Bloom filter saturation (RegisterBloom), attribute cacheguard.bloom:
	// the share of bits set (gauge).
	MetricBloomFillRatio = "cacheguard.bloom.fill_ratio"

	// Hot-key detector (RegisterHotKeys), attribute cacheguard.hotkeys.
	MetricHotKeysPromoted = "cacheguard.hotkeys.promoted"
	MetricHotKeysDemoted  = "cacheguard.hotkeys.demoted"
	MetricHotKeysHot      = "cacheguard.hotkeys.hot" // gauge
	// With hotkey.WithFleet: exchanges with the group's counts in Redis
	// (attribute outcome: ok | error), and the keys hot across the fleet.
	MetricHotKeysFleetExchanges = "cacheguard.hotkeys.fleet.exchanges"
	MetricHotKeysFleetHot       = "cacheguard.hotkeys.fleet.hot" // gauge

	// Locks (NewLockObserver), attribute cacheguard.locks (the client's
	// label; lock names are not attributes, they are unbounded).
	MetricLockWaitDuration = "cacheguard.lock.wait.duration" // histogram, s
	MetricLockHoldDuration = "cacheguard.lock.hold.duration" // histogram, s
	MetricLockLost         = "cacheguard.lock.lost"
	MetricLockPanics       = "cacheguard.lock.observer.panics"

	// Binlog source (RegisterBinlog), attribute cacheguard.binlog.
	MetricBinlogTransactions = "cacheguard.binlog.transactions"
	MetricBinlogRows         = "cacheguard.binlog.rows"
	MetricBinlogKeys         = "cacheguard.binlog.invalidations"
	MetricBinlogClears       = "cacheguard.binlog.clears"
	MetricBinlogSaves        = "cacheguard.binlog.saves"
	MetricBinlogTableDDL     = "cacheguard.binlog.table_ddl"
	MetricBinlogUnnamedRows  = "cacheguard.binlog.unnamed_rows"
	MetricBinlogErrors       = "cacheguard.binlog.errors"
	MetricBinlogLag          = "cacheguard.binlog.lag" // gauge, s
	MetricBinlogTakeovers    = "cacheguard.binlog.takeovers"
	MetricBinlogRole         = "cacheguard.binlog.role"        // gauge: 0 stopped, 1 tailing, 2 standing by
	MetricBinlogSinceEvent   = "cacheguard.binlog.since_event" // gauge, s

	// Queue metrics (RegisterQueue), each with the attribute cacheguard.queue.
	MetricQueueRecorded     = "cacheguard.queue.recorded"
	MetricQueueDone         = "cacheguard.queue.done"
	MetricQueueRetries      = "cacheguard.queue.retries"
	MetricQueueDeadLettered = "cacheguard.queue.dead_lettered"
	MetricQueueLostClaims   = "cacheguard.queue.lost_claims"
	MetricQueueRedisErrors  = "cacheguard.queue.redis.errors"
	MetricQueueFirstDelete  = "cacheguard.queue.first_delete_errors"
	MetricQueuePending      = "cacheguard.queue.pending" // gauge: deletes waiting in Redis
)

// Attribute keys.
const (
	AttrCache     = "cacheguard.cache"
	AttrQueue     = "cacheguard.queue"
	AttrTier      = "tier"
	AttrOutcome   = "outcome"
	AttrDirection = "direction"
	AttrReason    = "reason" // why a value was not cached (ttl_func.not_cached): zero | invalid
	AttrOp        = "op"
	AttrKey       = "cacheguard.key"
	AttrKeys      = "cacheguard.keys"
	AttrCoalesced = "cacheguard.coalesced" // span attribute: the fill was shared in this process
	AttrBloom     = "cacheguard.bloom"
	AttrHotKeys   = "cacheguard.hotkeys"
	AttrLocks     = "cacheguard.locks"
	AttrBinlog    = "cacheguard.binlog"

	// Span attributes of a Get or GetMany.
	AttrLeaseWaited  = "cacheguard.lease.waited"       // the fill waited for another holder's lease
	AttrLeaseWait    = "cacheguard.lease.wait_seconds" // how long (set when waited)
	AttrEarlyRefresh = "cacheguard.early_refresh"      // the call started a refresh ahead of expiry
	AttrSoftTimeout  = "cacheguard.soft_timeout"       // the call was answered stale past the soft load timeout
	AttrLoadTimeout  = "cacheguard.load_timeout"       // a load of the call hit the load timeout
)
