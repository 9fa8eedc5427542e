package otel

import (
	"context"
	"errors"

	"github.com/cacheguard/cacheguard/consistency"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

var queueCounters = []counter[consistency.Stats]{
	{MetricQueueRecorded, "Deletes recorded in the queue", one(func(s consistency.Stats) uint64 { return s.Recorded })},
	{MetricQueueFirstDelete, "Updates whose first delete failed", one(func(s consistency.Stats) uint64 { return s.FirstDeleteErrors })},
	{MetricQueueDone, "Recorded deletes carried out", one(func(s consistency.Stats) uint64 { return s.Done })},
	{MetricQueueRetries, "Failed attempts put back with backoff", one(func(s consistency.Stats) uint64 { return s.Retries })},
	{MetricQueueDeadLettered, "Deletes given up after the retry budget", one(func(s consistency.Stats) uint64 { return s.DeadLettered })},
	{MetricQueueLostClaims, "Entries another instance took over", one(func(s consistency.Stats) uint64 { return s.LostClaims })},
	{MetricQueueRedisErrors, "Queue operations Redis failed", one(func(s consistency.Stats) uint64 { return s.RedisErrors })},
}

// QueueSource is what RegisterQueue reads: a *consistency.Queue.
type QueueSource interface {
	Stats() consistency.Stats
	Pending(ctx context.Context) (int64, error)
}

// RegisterQueue registers observable instruments on meter reading q's Stats
// and, at each collection, its pending depth from Redis (one round trip per
// collection; a failure is returned to the SDK, which reports it, and the
// depth is left out of that collection). Attribute cacheguard.queue=name.
func RegisterQueue(meter metric.Meter, name string, q QueueSource) (metric.Registration, error) {
	base := metric.WithAttributes(attribute.String(AttrQueue, name))
	var errs []error
	insts := make([]metric.Int64ObservableCounter, len(queueCounters))
	observables := make([]metric.Observable, 0, len(queueCounters)+1)
	for i, m := range queueCounters {
		inst, err := meter.Int64ObservableCounter(m.name, metric.WithDescription(m.desc))
		errs = append(errs, err)
		insts[i] = inst
		observables = append(observables, inst)
	}
	pending, err := meter.Int64ObservableGauge(MetricQueuePending,
		metric.WithDescription("Deletes waiting in the queue (due or backing off)"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	observables = append(observables, pending)
	return meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st := q.Stats()
		for i, m := range queueCounters {
			o.ObserveInt64(insts[i], int64(m.series[0].value(st)), base)
		}
		n, err := q.Pending(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(pending, n, base)
		return nil
	}, observables...)
}
