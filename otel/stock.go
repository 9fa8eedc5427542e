package otel

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/stock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Stock metric names, each with the attribute cacheguard.stock.
const (
	MetricStockApplied      = "cacheguard.stock.consumer.applied"
	MetricStockCredited     = "cacheguard.stock.consumer.credited"
	MetricStockExpired      = "cacheguard.stock.consumer.expired"
	MetricStockClaimed      = "cacheguard.stock.consumer.claimed"
	MetricStockFailed       = "cacheguard.stock.consumer.failed"
	MetricStockDeadLettered = "cacheguard.stock.consumer.dead_lettered"
	MetricStockParkAlerts   = "cacheguard.stock.consumer.park_alerts"
	MetricStockParked       = "cacheguard.stock.consumer.parked" // gauge
	MetricStockLimited      = "cacheguard.stock.admission.limited"
	MetricStockFallbacks    = "cacheguard.stock.admission.fallbacks"

	AttrStock = "cacheguard.stock"
)

func n64(v int64) uint64 { return uint64(max(v, 0)) }

var consumerCounters = []counter[stock.ConsumerStats]{
	{MetricStockApplied, "Events the sink accepted", one(func(s stock.ConsumerStats) uint64 { return n64(s.Applied) })},
	{MetricStockCredited, "Bucket transfers landed by the consumer", one(func(s stock.ConsumerStats) uint64 { return n64(s.Credited) })},
	{MetricStockExpired, "Holds that ran out and were released", one(func(s stock.ConsumerStats) uint64 { return n64(s.Expired) })},
	{MetricStockClaimed, "Entries taken over from another consumer", one(func(s stock.ConsumerStats) uint64 { return n64(s.Claimed) })},
	{MetricStockFailed, "Failed applications (retried later)", one(func(s stock.ConsumerStats) uint64 { return n64(s.Failed) })},
	{MetricStockDeadLettered, "Entries moved to the dead-letter stream", one(func(s stock.ConsumerStats) uint64 { return n64(s.DeadLettered) })},
	{MetricStockParkAlerts, "Checks that found a release waiting too long for its reservation", one(func(s stock.ConsumerStats) uint64 { return n64(s.ParkAlerts) })},
}

// ConsumerStatsSource is a *stock.Consumer.
type ConsumerStatsSource interface{ Stats() stock.ConsumerStats }

// AdmissionStatsSource is a *stock.Admission.
type AdmissionStatsSource interface{ Stats() stock.AdmissionStats }

// RegisterStock registers observable instruments on meter reading the Stats
// of a stock consumer and admission (either may be nil), labelled
// cacheguard.stock=name.
func RegisterStock(meter metric.Meter, name string, c ConsumerStatsSource, a AdmissionStatsSource) (metric.Registration, error) {
	base := metric.WithAttributes(attribute.String(AttrStock, name))
	var errs []error
	var observables []metric.Observable
	counter := func(name, desc string) metric.Int64ObservableCounter {
		inst, err := meter.Int64ObservableCounter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		observables = append(observables, inst)
		return inst
	}
	insts := make([]metric.Int64ObservableCounter, len(consumerCounters))
	for i, m := range consumerCounters {
		insts[i] = counter(m.name, m.desc)
	}
	limited := counter(MetricStockLimited, "Requests refused as rate limited")
	fallbacks := counter(MetricStockFallbacks, "Admission decisions taken locally because Redis failed")
	parked, err := meter.Int64ObservableGauge(MetricStockParked,
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
				o.ObserveInt64(insts[i], int64(m.series[0].value(st)), base)
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
