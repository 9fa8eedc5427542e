package otel

import (
	"strings"
	"testing"
)

// Every documented name is served by the Prometheus exporter under its
// translated name, so names.go cannot list a metric nobody emits.
func TestDocumentedNamesAreServed(t *testing.T) {
	emitted := scrape(t)
	prom := func(name, suffix string) string { return strings.ReplaceAll(name, ".", "_") + suffix }
	var want []string
	for _, n := range []string{
		MetricHits, MetricMisses, MetricNullHits, MetricFilterRejects, MetricFilterErrors, MetricLoads,
		MetricFallbackLoads, MetricFallbackRejects, MetricLeaseWaits, MetricWaitTimeouts, MetricFillRefusals,
		MetricEarlyRefreshes, MetricCorrupt, MetricTooLarge, MetricRedisErrors, MetricBreakerRejects,
		MetricStaleServed, MetricLocalFlushes, MetricInvalidations, MetricInvalidationFailures,
		MetricInvalidationGaps, MetricInvalidationsLost, MetricInvalidationDecodeErrs, MetricSubscriptionDowns, MetricSubscriptionRefusals,
		MetricQueueRecorded, MetricQueueDone, MetricQueueRetries, MetricQueueDeadLettered, MetricQueueLostClaims,
		MetricQueueRedisErrors, MetricQueueFirstDelete,
		MetricObserverPanics, MetricHotKeysPromoted, MetricHotKeysDemoted, MetricLockLost, MetricLockPanics,
		MetricSoftTimeouts, MetricLoadTimeouts, MetricTTLNotCached, MetricClears, MetricGenerations, MetricCopyReads, MetricCopySeeds,
		MetricReplicaWaits, MetricReplicaLags,
		MetricBinlogTransactions, MetricBinlogRows, MetricBinlogKeys, MetricBinlogClears, MetricBinlogErrors,
		MetricBinlogSaves, MetricBinlogTableDDL, MetricBinlogUnnamedRows,
		MetricRateLimited, MetricRateLimitedLocal, MetricHotKeysFleetExchanges,
		MetricTagInvalidations, MetricTagMisses, MetricTagReads,
		MetricTrackingInvalidations, MetricTrackingFlushes, MetricTrackingDowns,
	} {
		want = append(want, prom(n, "_total"))
	}
	want = append(want, prom(MetricQueuePending, ""), prom(MetricHotKeysFleetHot, ""),
		prom(MetricInvalidationLag, "_seconds"), prom(MetricInvalidationLagMax, "_seconds"),
		prom(MetricGetDuration, "_seconds_bucket"), prom(MetricLoadDuration, "_seconds_bucket"),
		prom(MetricLeaseWaitDuration, "_seconds_bucket"), prom(MetricValueSize, "_bytes_bucket"),
		prom(MetricBreakerState, ""), prom(MetricBloomFillRatio, ""), prom(MetricHotKeysHot, ""),
		prom(MetricLockWaitDuration, "_seconds_bucket"), prom(MetricLockHoldDuration, "_seconds_bucket"),
		prom(MetricBinlogLag, "_seconds"))
	for _, n := range want {
		if !emitted[n] {
			t.Errorf("%s is documented but not served", n)
		}
	}
}
