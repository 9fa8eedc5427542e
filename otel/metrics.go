package otel

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/cache"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// counter is one observable counter fed from a Stats snapshot: each series
// pairs extra attributes with the field it reads.
type counter[S any] struct {
	name, desc string
	series     []series[S]
}

type series[S any] struct {
	attrs []attribute.KeyValue
	value func(S) uint64
}

func one[S any](f func(S) uint64) []series[S] { return []series[S]{{value: f}} }

var cacheCounters = []counter[cache.Stats]{
	{MetricHits, "Values served, by the tier that held them", []series[cache.Stats]{
		{[]attribute.KeyValue{attribute.String(AttrTier, "local")}, func(s cache.Stats) uint64 { return s.LocalHits }},
		{[]attribute.KeyValue{attribute.String(AttrTier, "redis")}, func(s cache.Stats) uint64 { return s.Hits - s.LocalHits }},
	}},
	{MetricMisses, "Reads that found no usable entry", one(func(s cache.Stats) uint64 { return s.Misses })},
	{MetricNullHits, "Cached absences served as not found", one(func(s cache.Stats) uint64 { return s.NullHits })},
	{MetricFilterRejects, "Reads answered not found by the Bloom filter alone", one(func(s cache.Stats) uint64 { return s.FilterRejects })},
	{MetricFilterErrors, "Bloom filter failures (the read went on without it)", one(func(s cache.Stats) uint64 { return s.FilterErrors })},
	{MetricLoads, "Loader calls, by outcome", []series[cache.Stats]{
		{[]attribute.KeyValue{attribute.String(AttrOutcome, "ok")}, func(s cache.Stats) uint64 { return s.Loads - s.LoadErrors }},
		{[]attribute.KeyValue{attribute.String(AttrOutcome, "error")}, func(s cache.Stats) uint64 { return s.LoadErrors }},
	}},
	{MetricFallbackLoads, "Direct loads while Redis was unavailable", one(func(s cache.Stats) uint64 { return s.FallbackLoads })},
	{MetricFallbackRejects, "Callers refused because the fallback cap was reached", one(func(s cache.Stats) uint64 { return s.FallbackRejected })},
	{MetricLeaseWaits, "Fills that waited for another holder's lease", one(func(s cache.Stats) uint64 { return s.LeaseWaits })},
	{MetricWaitTimeouts, "Lease waits that ran out of budget", one(func(s cache.Stats) uint64 { return s.WaitTimeouts })},
	{MetricFillRefusals, "Fills refused because a write won the lease", one(func(s cache.Stats) uint64 { return s.RejectedFills })},
	{MetricEarlyRefreshes, "Background refreshes started before expiry", one(func(s cache.Stats) uint64 { return s.EarlyRefresh })},
	{MetricCorrupt, "Foreign or undecodable entries found", one(func(s cache.Stats) uint64 { return s.Corrupt })},
	{MetricTooLarge, "Values not cached because of the size limit", one(func(s cache.Stats) uint64 { return s.TooLarge })},
	{MetricRedisErrors, "Redis calls that failed", one(func(s cache.Stats) uint64 { return s.RedisErrors })},
	{MetricBreakerRejects, "Calls the open circuit breaker kept away from Redis", one(func(s cache.Stats) uint64 { return s.BreakerRejects })},
	{MetricStaleServed, "Expired local entries served because Redis failed", one(func(s cache.Stats) uint64 { return s.StaleServed })},
	{MetricLocalFlushes, "Local tier clears on (re)subscription", one(func(s cache.Stats) uint64 { return s.LocalFlushes })},
	{MetricInvalidations, "Invalidation messages, by direction", []series[cache.Stats]{
		{[]attribute.KeyValue{attribute.String(AttrDirection, "sent")}, func(s cache.Stats) uint64 { return s.InvalidationsSent }},
		{[]attribute.KeyValue{attribute.String(AttrDirection, "received")}, func(s cache.Stats) uint64 { return s.InvalidationsReceived }},
	}},
	{MetricInvalidationFailures, "Invalidation messages given up after every retry", one(func(s cache.Stats) uint64 { return s.InvalidationSendFailures })},
	{MetricInvalidationGaps, "Gaps seen in a publisher's sequence", one(func(s cache.Stats) uint64 { return s.InvalidationGaps })},
	{MetricInvalidationsLost, "Invalidation messages known lost", one(func(s cache.Stats) uint64 { return s.InvalidationsLost })},
	{MetricInvalidationDecodeErrs, "Invalidation messages that did not decode", one(func(s cache.Stats) uint64 { return s.InvalidationDecodeErrors })},
	{MetricSubscriptionDowns, "Invalidation subscription failures", one(func(s cache.Stats) uint64 { return s.SubscriptionDowns })},
	{MetricSubscriptionRefusals, "Invalidation subscription failures refused by the Redis ACL (NOPERM)", one(func(s cache.Stats) uint64 { return s.SubscriptionRefusals })},
	{MetricObserverPanics, "Panics of the cache's Observer, recovered", one(func(s cache.Stats) uint64 { return s.ObserverPanics })},
	{MetricTagInvalidations, "Tags invalidated by InvalidateTags", one(func(s cache.Stats) uint64 { return s.TagInvalidations })},
	{MetricTagMisses, "Entries read and found invalidated by a tag", one(func(s cache.Stats) uint64 { return s.TagMisses })},
	{MetricTagReads, "Reads of tag invalidation times from Redis", one(func(s cache.Stats) uint64 { return s.TagReads })},
	{MetricTrackingInvalidations, "Keys Redis's tracking said changed, dropped from the local tier", one(func(s cache.Stats) uint64 { return s.TrackingInvalidations })},
	{MetricTrackingFlushes, "Flushes Redis's tracking reported, each clearing the local tier", one(func(s cache.Stats) uint64 { return s.TrackingFlushes })},
	{MetricTrackingDowns, "Times tracking was lost on a master (connection gone, failover, arming refused)", one(func(s cache.Stats) uint64 { return s.TrackingDowns })},
	{MetricSoftTimeouts, "Gets answered with a stale value because the reload outlasted the soft load timeout", one(func(s cache.Stats) uint64 { return s.SoftTimeouts })},
	{MetricLoadTimeouts, "Loader calls stopped by the load timeout", one(func(s cache.Stats) uint64 { return s.LoadTimeouts })},
	{MetricTTLNotCached, "Values not cached because of the TTL func's answer", []series[cache.Stats]{
		{[]attribute.KeyValue{attribute.String(AttrReason, "zero")}, func(s cache.Stats) uint64 { return s.TTLZero }},
		{[]attribute.KeyValue{attribute.String(AttrReason, "invalid")}, func(s cache.Stats) uint64 { return s.TTLInvalid }},
	}},
	{MetricRateLimited, "Redis reads and loads the key rate limit refused", one(func(s cache.Stats) uint64 { return s.RateLimited })},
	{MetricRateLimitedLocal, "Gets the key rate limit sent to the local tier instead", one(func(s cache.Stats) uint64 { return s.RateLimitedLocal })},
	{MetricClears, "Clear calls that moved the cache to a new generation", one(func(s cache.Stats) uint64 { return s.Clears })},
	{MetricGenerations, "Moves to a newer generation, by a Clear here or heard from another instance", one(func(s cache.Stats) uint64 { return s.Generations })},
	{MetricCopyReads, "Hits read from a hot key's copy on another master", one(func(s cache.Stats) uint64 { return s.CopyReads })},
	{MetricCopySeeds, "Hot-key copies written after a read found one missing", one(func(s cache.Stats) uint64 { return s.CopySeeds })},
	{MetricReplicaWaits, "Writes that waited for the replicas reads may go to", one(func(s cache.Stats) uint64 { return s.ReplicaWaits })},
	{MetricReplicaLags, "Writes the replicas did not all acknowledge in time", one(func(s cache.Stats) uint64 { return s.ReplicaLags })},
}

// StatsSource is what RegisterCache reads: a *cache.Cache[V] of any V.
type StatsSource interface{ Stats() cache.Stats }

// RegisterCache registers observable instruments on meter that read c's
// Stats at each collection, labelled with the attribute cacheguard.cache=name.
// Unregister the returned registration when the cache is closed.
func RegisterCache(meter metric.Meter, name string, c StatsSource) (metric.Registration, error) {
	base := attribute.String(AttrCache, name)
	var errs []error
	insts := make([]metric.Int64ObservableCounter, len(cacheCounters))
	observables := make([]metric.Observable, 0, len(cacheCounters)+2)
	for i, m := range cacheCounters {
		inst, err := meter.Int64ObservableCounter(m.name, metric.WithDescription(m.desc))
		errs = append(errs, err)
		insts[i] = inst
		observables = append(observables, inst)
	}
	lag, err := meter.Float64ObservableGauge(MetricInvalidationLag, metric.WithUnit("s"),
		metric.WithDescription("Publish-to-apply delay of the latest invalidation message"))
	errs = append(errs, err)
	lagMax, err := meter.Float64ObservableGauge(MetricInvalidationLagMax, metric.WithUnit("s"),
		metric.WithDescription("Largest publish-to-apply delay of an invalidation message"))
	errs = append(errs, err)
	breaker, err := meter.Int64ObservableGauge(MetricBreakerState,
		metric.WithDescription("Circuit breaker state: 0 closed, 1 half-open, 2 open"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	observables = append(observables, lag, lagMax, breaker)
	sets := make([][]metric.ObserveOption, len(cacheCounters))
	for i, m := range cacheCounters {
		for _, s := range m.series {
			sets[i] = append(sets[i], metric.WithAttributes(append([]attribute.KeyValue{base}, s.attrs...)...))
		}
	}
	only := metric.WithAttributes(base)
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := c.Stats()
		for i, m := range cacheCounters {
			for j, s := range m.series {
				o.ObserveInt64(insts[i], int64(s.value(st)), sets[i][j])
			}
		}
		o.ObserveFloat64(lag, st.InvalidationLag.Seconds(), only)
		o.ObserveFloat64(lagMax, st.InvalidationLagMax.Seconds(), only)
		o.ObserveInt64(breaker, int64(st.Breaker), only)
		return nil
	}, observables...)
}
