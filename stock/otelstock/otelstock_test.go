package otelstock

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cacheguard/cacheguard/stock"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type consumerStats func() stock.ConsumerStats

func (f consumerStats) Stats() stock.ConsumerStats { return f() }

type admissionStats func() stock.AdmissionStats

func (f admissionStats) Stats() stock.AdmissionStats { return f() }

// meter returns a meter of a provider of its own, and the provider's reader.
func meter(t *testing.T) (metric.Meter, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp.Meter("test"), reader
}

// collect reads every int64 sum and gauge point as name -> value.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			}
			for _, p := range points {
				out[m.Name] += p.Value
			}
		}
	}
	return out
}

// The mapping from stock's Stats fields to metric names.
func TestMetricsMapStats(t *testing.T) {
	cs := stock.ConsumerStats{Applied: 1, Credited: 2, Expired: 3, Claimed: 4, Failed: 5, DeadLettered: 6, Parked: 7, ParkAlerts: 8, NameConflicts: 9}
	as := stock.AdmissionStats{Limited: 9, Fallbacks: 10}
	m, reader := meter(t)
	if _, err := Register(m, "sku", consumerStats(func() stock.ConsumerStats { return cs }), admissionStats(func() stock.AdmissionStats { return as })); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	want := map[string]int64{
		MetricApplied: 1, MetricCredited: 2, MetricExpired: 3, MetricClaimed: 4,
		MetricFailed: 5, MetricDeadLettered: 6, MetricParked: 7, MetricParkAlerts: 8, MetricNameConflicts: 9,
		MetricLimited: 9, MetricFallbacks: 10,
	}
	for k, v := range want {
		if g := got[k]; g != v {
			t.Errorf("%s = %d, want %d", k, g, v)
		}
	}
}

// exportsEveryField fails for each field of S whose value no exported point
// depends on: with every field set apart, it moves one field at a time and
// compares the collections. A field added to a Stats without a metric fails
// here.
func exportsEveryField[S any](t *testing.T, register func(metric.Meter, func() S) (metric.Registration, error)) {
	t.Helper()
	var st S
	m, reader := meter(t)
	if _, err := register(m, func() S { return st }); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		if !v.Field(i).CanInt() {
			t.Fatalf("%s.%s is not an int64: no check knows how to export it", v.Type(), v.Type().Field(i).Name)
		}
		v.Field(i).SetInt(int64(i+1) * 11)
	}
	base := collect(t, reader)
	for i := range v.NumField() {
		f := v.Field(i)
		f.SetInt(f.Int() + 5)
		moved := collect(t, reader)
		f.SetInt(f.Int() - 5)
		if maps.Equal(base, moved) {
			t.Errorf("%s.%s: no exported metric follows it", v.Type(), v.Type().Field(i).Name)
		}
	}
}

func TestEveryStatsFieldIsExported(t *testing.T) {
	exportsEveryField(t, func(m metric.Meter, st func() stock.ConsumerStats) (metric.Registration, error) {
		return Register(m, "sku", consumerStats(st), nil)
	})
	exportsEveryField(t, func(m metric.Meter, st func() stock.AdmissionStats) (metric.Registration, error) {
		return Register(m, "sku", nil, admissionStats(st))
	})
}

// The dashboard queries only metrics Register serves, by their Prometheus
// names: dots become underscores, counters end in _total.
func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	served := map[string]bool{strings.ReplaceAll(MetricParked, ".", "_"): true}
	for _, n := range []string{MetricApplied, MetricCredited, MetricExpired, MetricClaimed, MetricFailed,
		MetricDeadLettered, MetricParkAlerts, MetricLimited, MetricFallbacks} {
		served[strings.ReplaceAll(n, ".", "_")+"_total"] = true
	}
	raw, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	name := regexp.MustCompile(`cacheguard_[a-z_]+`)
	labels := regexp.MustCompile(`\{[^}]*\}|\b(by|without) \([^)]*\)`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(labels.ReplaceAllString(tg.Expr, ""), -1) {
				queried++
				if !served[n] {
					t.Errorf("panel %q queries %s, which Register does not serve", p.Title, n)
				}
			}
		}
	}
	if queried == 0 {
		t.Fatal("the dashboard queries nothing")
	}
}
