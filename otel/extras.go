package otel

import (
	"context"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/hotkey"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// FillRatioSource is a *bloom.Fleet, *bloom.Local or *bloom.Redis.
type FillRatioSource interface {
	FillRatio(ctx context.Context) (float64, error)
}

// RegisterBloom registers the gauge MetricBloomFillRatio reading f's
// saturation at each collection (for a Redis filter, one BITCOUNT per
// collection; a failure is returned to the SDK and the point left out),
// labelled cacheguard.bloom=name.
func RegisterBloom(meter metric.Meter, name string, f FillRatioSource) (metric.Registration, error) {
	base := metric.WithAttributes(attribute.String(AttrBloom, name))
	g, err := meter.Float64ObservableGauge(MetricBloomFillRatio,
		metric.WithDescription("Share of the Bloom filter's bits that are set; the false-positive rate is about this to the power k"))
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		r, err := f.FillRatio(ctx)
		if err != nil {
			return err
		}
		o.ObserveFloat64(g, r, base)
		return nil
	}, g)
}

// HotKeysSource is a *hotkey.Detector.
type HotKeysSource interface{ Stats() hotkey.Stats }

// RegisterHotKeys registers the detector's promotion and demotion counters
// and its hot-set size, and with a fleet (hotkey.WithFleet) its exchanges by
// outcome and the fleet's hot-set size, labelled cacheguard.hotkeys=name.
func RegisterHotKeys(meter metric.Meter, name string, d HotKeysSource) (metric.Registration, error) {
	base := attribute.String(AttrHotKeys, name)
	only := metric.WithAttributes(base)
	ok := metric.WithAttributes(base, attribute.String(AttrOutcome, "ok"))
	failed := metric.WithAttributes(base, attribute.String(AttrOutcome, "error"))
	promoted, err1 := meter.Int64ObservableCounter(MetricHotKeysPromoted, metric.WithDescription("Keys that became hot"))
	demoted, err2 := meter.Int64ObservableCounter(MetricHotKeysDemoted, metric.WithDescription("Keys that stopped being hot"))
	hot, err3 := meter.Int64ObservableGauge(MetricHotKeysHot, metric.WithDescription("Keys hot at the last tick"))
	exchanges, err4 := meter.Int64ObservableCounter(MetricHotKeysFleetExchanges,
		metric.WithDescription("Exchanges with the fleet's counts in Redis, by outcome"))
	fleetHot, err5 := meter.Int64ObservableGauge(MetricHotKeysFleetHot, metric.WithDescription("Keys hot across the fleet at the last exchange"))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := d.Stats()
		o.ObserveInt64(promoted, int64(st.Promoted), only)
		o.ObserveInt64(demoted, int64(st.Demoted), only)
		o.ObserveInt64(hot, int64(st.Hot), only)
		o.ObserveInt64(exchanges, int64(st.FleetExchanges-st.FleetErrors), ok)
		o.ObserveInt64(exchanges, int64(st.FleetErrors), failed)
		o.ObserveInt64(fleetHot, int64(st.FleetHot), only)
		return nil
	}, promoted, demoted, hot, exchanges, fleetHot)
}

// BinlogStats are the figures RegisterBinlog reports. The binlog source lives
// in a module of its own (github.com/cacheguard/cacheguard/consistency/binlog,
// with a MySQL replication client) that this module does not import, to keep
// its dependencies small; wire it with a function copying its Stats:
//
//	otel.RegisterBinlog(meter, "orders", func() otel.BinlogStats {
//		s := src.Stats()
//		return otel.BinlogStats(src.Stats())
//	})
//
// BinlogStats has the fields of binlog.Stats, in its order, so that the
// conversion compiles; a test of this module holds the two together.
type BinlogStats struct {
	Transactions, Rows, Keys, Saves, Clears, TableDDL, UnnamedRows, Errors uint64
	Lag                                                                    time.Duration
	Role                                                                   int64
	SinceEvent                                                             time.Duration
	Takeovers                                                              uint64
}

// RegisterBinlog registers the binlog source's counters and lag, read from
// stats at each collection, labelled cacheguard.binlog=name.
func RegisterBinlog(meter metric.Meter, name string, stats func() BinlogStats) (metric.Registration, error) {
	if stats == nil {
		return nil, errors.New("cacheguard: otel: RegisterBinlog needs a stats function")
	}
	base := metric.WithAttributes(attribute.String(AttrBinlog, name))
	var errs []error
	counter := func(n, desc string) metric.Int64ObservableCounter {
		c, err := meter.Int64ObservableCounter(n, metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	tx := counter(MetricBinlogTransactions, "Commits read from the binlog")
	rows := counter(MetricBinlogRows, "Row events of watched tables applied")
	keys := counter(MetricBinlogKeys, "Keys invalidated")
	saves := counter(MetricBinlogSaves, "Positions saved")
	clears := counter(MetricBinlogClears, "Key spaces cleared after TRUNCATE or DROP")
	ddl := counter(MetricBinlogTableDDL, "Other DDL on watched tables (ALTER, RENAME), logged and passed")
	unnamed := counter(MetricBinlogUnnamedRows, "Rows skipped for lack of column names")
	errc := counter(MetricBinlogErrors, "Failures reported by the source (passed over or retried)")
	takeovers := counter(MetricBinlogTakeovers, "Times this source took the tailer's lease over from another instance")
	lag, err := meter.Float64ObservableGauge(MetricBinlogLag, metric.WithUnit("s"),
		metric.WithDescription("How far behind the database the last commit read was"))
	errs = append(errs, err)
	role, err := meter.Int64ObservableGauge(MetricBinlogRole,
		metric.WithDescription("What the source does: 0 stopped, 1 tailing, 2 standing by (another instance tails)"))
	errs = append(errs, err)
	since, err := meter.Float64ObservableGauge(MetricBinlogSinceEvent, metric.WithUnit("s"),
		metric.WithDescription("How long ago the last event (a heartbeat included) was read from the stream"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := stats()
		o.ObserveInt64(tx, int64(s.Transactions), base)
		o.ObserveInt64(rows, int64(s.Rows), base)
		o.ObserveInt64(keys, int64(s.Keys), base)
		o.ObserveInt64(saves, int64(s.Saves), base)
		o.ObserveInt64(clears, int64(s.Clears), base)
		o.ObserveInt64(ddl, int64(s.TableDDL), base)
		o.ObserveInt64(unnamed, int64(s.UnnamedRows), base)
		o.ObserveInt64(errc, int64(s.Errors), base)
		o.ObserveFloat64(lag, s.Lag.Seconds(), base)
		o.ObserveInt64(takeovers, int64(s.Takeovers), base)
		o.ObserveInt64(role, s.Role, base)
		o.ObserveFloat64(since, s.SinceEvent.Seconds(), base)
		return nil
	}, tx, rows, keys, saves, clears, ddl, unnamed, errc, lag, takeovers, role, since)
}
