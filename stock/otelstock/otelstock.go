// Package otelstock turns the counters of a flash sale's consumer and
// admission into OpenTelemetry metrics. It lives in the stock module and
// imports only the OpenTelemetry metric API, so that a service watching its
// caches with github.com/cacheguard/cacheguard/otel does not depend on the
// stock module, and a flash sale does not depend on the otel module.
//
//	reg, _ := otelstock.Register(meterProvider.Meter(otel.ScopeName), "sku", consumer, admission)
//	defer reg.Unregister()
//
// The metrics are asynchronous: Register reads the Stats snapshots when the
// SDK collects. grafana-dashboard.json in this directory is a Grafana
// dashboard of them, whose queries a test checks against these names.
package otelstock

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/stock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names, stable across releases, each with the attribute
// cacheguard.stock. Counters are cumulative since the consumer (or
// admission) was created.
const (
	MetricApplied       = "cacheguard.stock.consumer.applied"
	MetricCredited      = "cacheguard.stock.consumer.credited"
	MetricExpired       = "cacheguard.stock.consumer.expired"
	MetricClaimed       = "cacheguard.stock.consumer.claimed"
	MetricFailed        = "cacheguard.stock.consumer.failed"
	MetricDeadLettered  = "cacheguard.stock.consumer.dead_lettered"
	MetricParkAlerts    = "cacheguard.stock.consumer.park_alerts"
	MetricNameConflicts = "cacheguard.stock.consumer.name_conflicts"
	MetricParked        = "cacheguard.stock.consumer.parked" // gauge
	MetricLimited       = "cacheguard.stock.admission.limited"
	MetricFallbacks     = "cacheguard.stock.admission.fallbacks"

	AttrStock = "cacheguard.stock"
)

type counter struct {
	name, desc string
	value      func(stock.ConsumerStats) int64
}

var consumerCounters = []counter{
	{MetricApplied, "Events the sink accepted", func(s stock.ConsumerStats) int64 { return s.Applied }},
	{MetricCredited, "Bucket transfers landed by the consumer", func(s stock.ConsumerStats) int64 { return s.Credited }},
	{MetricExpired, "Holds that ran out and were released", func(s stock.ConsumerStats) int64 { return s.Expired }},
	{MetricClaimed, "Entries taken over from another consumer", func(s stock.ConsumerStats) int64 { return s.Claimed }},
	{MetricFailed, "Failed applications (retried later)", func(s stock.ConsumerStats) int64 { return s.Failed }},
	{MetricDeadLettered, "Entries moved to the dead-letter stream", func(s stock.ConsumerStats) int64 { return s.DeadLettered }},
	{MetricParkAlerts, "Checks that found a release waiting too long for its reservation", func(s stock.ConsumerStats) int64 { return s.ParkAlerts }},
	{MetricNameConflicts, "Times the consumer found its name held by another live consumer and took one of its own", func(s stock.ConsumerStats) int64 { return s.NameConflicts }},
}

// ConsumerStatsSource is a *stock.Consumer.
type ConsumerStatsSource interface{ Stats() stock.ConsumerStats }

// AdmissionStatsSource is a *stock.Admission.
type AdmissionStatsSource interface{ Stats() stock.AdmissionStats }

// Register registers observable instruments on meter reading the Stats of a
// stock consumer and admission (either may be nil), labelled
// cacheguard.stock=name. Unregister the returned registration when they are
// closed.
func Register(meter metric.Meter, name string, c ConsumerStatsSource, a AdmissionStatsSource) (metric.Registration, error) {
	base := metric.WithAttributes(attribute.String(AttrStock, name))
	var errs []error
	var observables []metric.Observable
	count := func(name, desc string) metric.Int64ObservableCounter {
		inst, err := meter.Int64ObservableCounter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		observables = append(observables, inst)
		return inst
	}
	insts := make([]metric.Int64ObservableCounter, len(consumerCounters))
	for i, m := range consumerCounters {
		insts[i] = count(m.name, m.desc)
	}
	limited := count(MetricLimited, "Requests refused as rate limited")
	fallbacks := count(MetricFallbacks, "Admission decisions taken locally because Redis failed")
	parked, err := meter.Int64ObservableGauge(MetricParked,
		metric.WithDescription("Releases and confirms waiting for their reservation, at the last check"))
	errs = append(errs, err)
	observables = append(observables, parked)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if c != nil {
			st := c.Stats()
			for i, m := range consumerCounters {
				o.ObserveInt64(insts[i], max(m.value(st), 0), base)
			}
			o.ObserveInt64(parked, st.Parked, base)
		}
		if a != nil {
			st := a.Stats()
			o.ObserveInt64(limited, st.Limited, base)
			o.ObserveInt64(fallbacks, st.Fallbacks, base)
		}
		return nil
	}, observables...)
}
