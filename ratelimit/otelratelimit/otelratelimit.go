// Package otelratelimit turns a key rate limiter's counters into
// OpenTelemetry metrics. It lives in the ratelimit module and imports only
// the OpenTelemetry metric API, so that a service watching its caches with
// github.com/cacheguard/cacheguard/otel does not depend on the ratelimit
// module.
//
//	reg, _ := otelratelimit.Register(meterProvider.Meter(otel.ScopeName), "users", limiter)
//	defer reg.Unregister()
//
// The cache's own side of the limit (Gets refused, Gets answered from the
// local tier instead) is in the cache's metrics: cacheguard.cache.rate_limited
// and cacheguard.cache.rate_limited.local.
package otelratelimit

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/ratelimit"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names, stable across releases, each with the attribute
// cacheguard.ratelimit; counters, cumulative since the limiter was created.
const (
	MetricDecisions      = "cacheguard.ratelimit.decisions" // attribute outcome: allowed | limited
	MetricStoreErrors    = "cacheguard.ratelimit.store_errors"
	MetricLocalDecisions = "cacheguard.ratelimit.local_decisions"

	AttrRateLimit = "cacheguard.ratelimit"
	AttrOutcome   = "outcome"
)

// StatsSource is a *ratelimit.Limiter.
type StatsSource interface{ Stats() ratelimit.Stats }

// Register registers observable instruments on meter reading l's Stats at
// each collection, labelled cacheguard.ratelimit=name.
func Register(meter metric.Meter, name string, l StatsSource) (metric.Registration, error) {
	base := attribute.String(AttrRateLimit, name)
	only := metric.WithAttributes(base)
	allowed := metric.WithAttributes(base, attribute.String(AttrOutcome, "allowed"))
	limited := metric.WithAttributes(base, attribute.String(AttrOutcome, "limited"))
	decisions, err1 := meter.Int64ObservableCounter(MetricDecisions, metric.WithDescription("Operations admitted or refused, by outcome"))
	storeErrs, err2 := meter.Int64ObservableCounter(MetricStoreErrors, metric.WithDescription("Redis calls of the limiter that failed"))
	local, err3 := meter.Int64ObservableCounter(MetricLocalDecisions,
		metric.WithDescription("Decisions taken by this instance's share of a budget because Redis failed"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := l.Stats()
		o.ObserveInt64(decisions, int64(st.Allowed), allowed)
		o.ObserveInt64(decisions, int64(st.Limited), limited)
		o.ObserveInt64(storeErrs, int64(st.StoreErrors), only)
		o.ObserveInt64(local, int64(st.LocalDecisions), only)
		return nil
	}, decisions, storeErrs, local)
}
