package otel

import (
	"context"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/cacheguard/cacheguard/otel"

// Observer is a cache.Observer producing a span per Get or GetMany (named
// "cacheguard.Get" / "cacheguard.GetMany", with the tier that answered), a
// child span "cacheguard.load" per loader call, and the latency histograms
// MetricGetDuration and MetricLoadDuration.
type Observer struct {
	tracer   trace.Tracer
	getDur   metric.Float64Histogram
	loadDur  metric.Float64Histogram
	leaseDur metric.Float64Histogram
	size     metric.Int64Histogram
	name     attribute.KeyValue
	read     metric.MeasurementOption
	write    metric.MeasurementOption
}

var (
	_ cache.Observer          = (*Observer)(nil)
	_ cache.ValueSizeObserver = (*Observer)(nil)
)

// NewObserver returns an Observer for the cache called name, using tp and mp
// (pass otel.GetTracerProvider() and otel.GetMeterProvider() for the global
// ones: nothing global is read here).
func NewObserver(name string, tp trace.TracerProvider, mp metric.MeterProvider) (*Observer, error) {
	if tp == nil || mp == nil {
		return nil, errors.New("cacheguard: otel: NewObserver needs a tracer and a meter provider")
	}
	meter := mp.Meter(ScopeName)
	getDur, err1 := meter.Float64Histogram(MetricGetDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of Get and GetMany calls, by the tier that answered"))
	loadDur, err2 := meter.Float64Histogram(MetricLoadDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of loader calls, by outcome"))
	leaseDur, err3 := meter.Float64Histogram(MetricLeaseWaitDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a fill waited for another holder's lease before it found the value, took the lease or gave up"))
	size, err4 := meter.Int64Histogram(MetricValueSize, metric.WithUnit("By"),
		metric.WithDescription("Encoded size of entries read from and written to Redis"),
		metric.WithExplicitBucketBoundaries(64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	n := attribute.String(AttrCache, name)
	return &Observer{
		tracer:   tp.Tracer(ScopeName),
		getDur:   getDur,
		loadDur:  loadDur,
		leaseDur: leaseDur,
		size:     size,
		name:     n,
		read:     metric.WithAttributeSet(attribute.NewSet(n, attribute.String(AttrOp, "read"))),
		write:    metric.WithAttributeSet(attribute.NewSet(n, attribute.String(AttrOp, "write"))),
	}, nil
}

// StartGet implements cache.Observer.
func (o *Observer) StartGet(ctx context.Context, op string, keys []string) (context.Context, func(cache.GetInfo)) {
	attrs := []attribute.KeyValue{o.name, attribute.Int(AttrKeys, len(keys))}
	if op == "Get" && len(keys) == 1 {
		attrs = append(attrs, attribute.String(AttrKey, keys[0]))
	}
	ctx, span := o.tracer.Start(ctx, "cacheguard."+op, trace.WithAttributes(attrs...))
	start := time.Now()
	return ctx, func(info cache.GetInfo) {
		tier := info.Tier.String()
		span.SetAttributes(attribute.String(AttrTier, tier), attribute.Bool(AttrCoalesced, info.Coalesced),
			attribute.Bool(AttrLeaseWaited, info.LeaseWaited), attribute.Bool(AttrEarlyRefresh, info.EarlyRefresh),
			attribute.Bool(AttrSoftTimeout, info.SoftTimeout), attribute.Bool(AttrLoadTimeout, info.LoadTimeout))
		if info.LeaseWaited {
			span.SetAttributes(attribute.Float64(AttrLeaseWait, info.LeaseWait.Seconds()))
			o.leaseDur.Record(context.WithoutCancel(ctx), info.LeaseWait.Seconds(), metric.WithAttributes(o.name))
		}
		if info.Err != nil && !errors.Is(info.Err, cache.ErrNotFound) {
			span.RecordError(info.Err)
			span.SetStatus(codes.Error, info.Err.Error())
		}
		if errors.Is(info.Err, cache.ErrNotFound) {
			span.SetAttributes(attribute.Bool("cacheguard.not_found", true))
		}
		span.End()
		o.getDur.Record(context.WithoutCancel(ctx), time.Since(start).Seconds(), metric.WithAttributes(
			o.name, attribute.String(AttrOp, op), attribute.String(AttrTier, tier)))
	}
}

// StartLoad implements cache.Observer.
func (o *Observer) StartLoad(ctx context.Context, keys []string) (context.Context, func(error)) {
	ctx, span := o.tracer.Start(ctx, "cacheguard.load", trace.WithAttributes(o.name, attribute.Int(AttrKeys, len(keys))))
	start := time.Now()
	return ctx, func(err error) {
		outcome := "ok"
		switch {
		case errors.Is(err, cache.ErrNotFound):
			outcome = "not_found"
		case err != nil:
			outcome = "error"
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.SetAttributes(attribute.String(AttrOutcome, outcome))
		span.End()
		o.loadDur.Record(context.WithoutCancel(ctx), time.Since(start).Seconds(),
			metric.WithAttributes(o.name, attribute.String(AttrOutcome, outcome)))
	}
}

// ValueSize implements cache.ValueSizeObserver.
func (o *Observer) ValueSize(op string, bytes int) {
	opt := o.read
	if op == "write" {
		opt = o.write
	}
	o.size.Record(context.Background(), int64(bytes), opt)
}
