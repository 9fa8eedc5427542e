// Package otel turns a cacheguard cache's counters and calls into
// OpenTelemetry metrics and traces. It lives in its own module so that the
// core module does not depend on OpenTelemetry.
//
// Wiring, for a cache and a durable invalidation queue:
//
//	obs, _ := otel.NewObserver("users", tracerProvider, meterProvider)
//	users, _ := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"), cache.WithObserver(obs))
//	reg, _ := otel.RegisterCache(meterProvider.Meter(otel.ScopeName), "users", users)
//	defer reg.Unregister()
//	qreg, _ := otel.RegisterQueue(meterProvider.Meter(otel.ScopeName), "orders", queue)
//
// The packages released in modules of their own carry their metrics beside
// them, importing only the OpenTelemetry metric API, so that this module
// depends on the core module alone: a flash sale's in
// github.com/cacheguard/cacheguard/stock/otelstock, the key rate limiter's
// in github.com/cacheguard/cacheguard/ratelimit/otelratelimit. The binlog
// source's are here (RegisterBinlog), fed by a conversion of its Stats.
//
// Every numeric field of the Stats these functions read is exported: a
// test of each module moves one field at a time and fails when no metric
// follows it.
//
// Metrics are asynchronous: RegisterCache and RegisterQueue read the Stats
// snapshots (atomic counters the packages keep anyway) when the SDK collects,
// so the read path pays nothing for them. Traces and latency histograms come
// from an Observer installed with cache.WithObserver: a span per Get or
// GetMany, with the tier that answered, and the loader as a child span.
//
// Locks report through a LockObserver installed with lock.WithObserver (wait
// and hold time histograms, lost locks) and RegisterLockStats (its recovered
// panics). RegisterBloom, RegisterHotKeys and RegisterBinlog read the
// saturation of a Bloom filter, a hot-key detector's promotions and fleet
// exchanges, and a binlog source's progress; the binlog module is not
// imported (see BinlogStats).
//
// Span attributes of cacheguard.Get and cacheguard.GetMany:
//
//	cacheguard.cache              the cache's name
//	cacheguard.key / .keys        the key (Get), the number of keys
//	tier                          local | redis | fill | loader | none
//	cacheguard.coalesced          the fill was shared with callers in this process
//	cacheguard.lease.waited       the fill waited for another holder's lease
//	cacheguard.lease.wait_seconds how long (only when it waited)
//	cacheguard.early_refresh      the call started a refresh ahead of expiry
//	cacheguard.not_found          the call returned ErrNotFound
//
// Metric names are stable; the Prometheus exporter renders them with dots as
// underscores and counters suffixed _total (cacheguard.cache.hits becomes
// cacheguard_cache_hits_total). See names.go for the list. RegisterCache
// adds the gauge cacheguard.cache.breaker.state (0 closed, 1 half-open,
// 2 open); the Observer records the histograms cacheguard.cache.get.duration,
// cacheguard.cache.load.duration, cacheguard.cache.lease.wait.duration
// (seconds) and cacheguard.cache.value.size (bytes, op read or write).
//
// grafana-dashboard.json in this module is a Grafana dashboard whose queries
// a test checks against what the Prometheus exporter really serves;
// Example_prometheus shows the wiring.
package otel
