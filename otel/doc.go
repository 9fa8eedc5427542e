// Package otel turns a cacheguard cache's counters and calls into
// OpenTelemetry metrics and traces. It lives in its own module so that the
// core module does not depend on OpenTelemetry.
//
// Metrics are asynchronous: RegisterCache and RegisterQueue read the Stats
// snapshots (atomic counters the packages keep anyway) when the SDK collects,
// so the read path pays nothing for them. Traces and latency histograms come
// from an Observer installed with cache.WithObserver: a span per Get or
// GetMany, with the tier that answered, and the loader as a child span.
//
// Metric names are stable; the Prometheus exporter renders them with dots as
// underscores and counters suffixed _total (cacheguard.cache.hits becomes
// cacheguard_cache_hits_total). See names.go for the list.
package otel
