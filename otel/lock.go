package otel

import (
	"context"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/lock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// LockObserver is a lock.Observer recording the histograms
// MetricLockWaitDuration and MetricLockHoldDuration and the counter
// MetricLockLost, labelled cacheguard.locks=name (one label per client, not
// per lock: lock names are unbounded). Install it with lock.WithObserver.
type LockObserver struct {
	wait, hold metric.Float64Histogram
	lost       metric.Int64Counter
	attrs      metric.MeasurementOption
}

var _ lock.Observer = (*LockObserver)(nil)

// NewLockObserver returns a LockObserver on mp.
func NewLockObserver(name string, mp metric.MeterProvider) (*LockObserver, error) {
	if mp == nil {
		return nil, errors.New("cacheguard: otel: NewLockObserver needs a meter provider")
	}
	m := mp.Meter(ScopeName)
	wait, err1 := m.Float64Histogram(MetricLockWaitDuration, metric.WithUnit("s"),
		metric.WithDescription("Time Lock (or TryLock) took to obtain a lock"))
	hold, err2 := m.Float64Histogram(MetricLockHoldDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a lock was held, from obtaining it to Unlock"))
	lost, err3 := m.Int64Counter(MetricLockLost, metric.WithDescription("Locks lost before Unlock (lease ran out, key gone or taken)"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return &LockObserver{wait: wait, hold: hold, lost: lost,
		attrs: metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrLocks, name)))}, nil
}

// Acquired implements lock.Observer.
func (o *LockObserver) Acquired(_ string, waited time.Duration) {
	o.wait.Record(context.Background(), waited.Seconds(), o.attrs)
}

// Released implements lock.Observer.
func (o *LockObserver) Released(_ string, held time.Duration) {
	o.hold.Record(context.Background(), held.Seconds(), o.attrs)
}

// Lost implements lock.Observer.
func (o *LockObserver) Lost(string) { o.lost.Add(context.Background(), 1, o.attrs) }

// LockStatsSource is a *lock.Client or *lock.Redlock.
type LockStatsSource interface{ Stats() lock.Stats }

// RegisterLockStats registers MetricLockPanics, the client's recovered
// Observer panics, labelled cacheguard.locks=name.
func RegisterLockStats(meter metric.Meter, name string, c LockStatsSource) (metric.Registration, error) {
	base := metric.WithAttributes(attribute.String(AttrLocks, name))
	p, err := meter.Int64ObservableCounter(MetricLockPanics, metric.WithDescription("Panics of the lock Observer, recovered"))
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(p, int64(c.Stats().ObserverPanics), base)
		return nil
	}, p)
}
