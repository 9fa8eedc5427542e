package otelratelimit

import (
	"context"
	"reflect"
	"testing"

	"github.com/cacheguard/cacheguard/ratelimit"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type source ratelimit.Stats

func (s *source) Stats() ratelimit.Stats { return ratelimit.Stats(*s) }

// Every field of ratelimit.Stats is exported: with each field holding a value
// of its own, every value is some point's. A field added to Stats without a
// metric fails here.
func TestEveryStatsFieldIsExported(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	var st source
	if _, err := Register(mp.Meter("test"), "users", &st); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(1000*(i+1) + 7))
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	points := map[int64][]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range sum.DataPoints {
					points[p.Value] = append(points[p.Value], m.Name)
				}
			}
		}
	}
	for i := range v.NumField() {
		if _, ok := points[int64(v.Field(i).Uint())]; !ok {
			t.Errorf("ratelimit.Stats.%s: no exported metric holds its value", v.Type().Field(i).Name)
		}
	}
}
