package otel

import (
	"context"
	"testing"

	"github.com/cacheguard/cacheguard/stock"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

type consumerStats stock.ConsumerStats

func (s consumerStats) Stats() stock.ConsumerStats { return stock.ConsumerStats(s) }

type admissionStats stock.AdmissionStats

func (s admissionStats) Stats() stock.AdmissionStats { return stock.AdmissionStats(s) }

// The mapping from stock's Stats fields to metric names.
func TestStockMetricsMapStats(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	_, err := RegisterStock(mp.Meter(ScopeName), "sku",
		consumerStats{Applied: 1, Credited: 2, Expired: 3, Claimed: 4, Failed: 5, DeadLettered: 6, Parked: 7, ParkAlerts: 8},
		admissionStats{Limited: 9, Fallbacks: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	want := map[string]int64{
		MetricStockApplied: 1, MetricStockCredited: 2, MetricStockExpired: 3, MetricStockClaimed: 4,
		MetricStockFailed: 5, MetricStockDeadLettered: 6, MetricStockParked: 7, MetricStockParkAlerts: 8,
		MetricStockLimited: 9, MetricStockFallbacks: 10,
	}
	for k, v := range want {
		if g := got[k]; g != v {
			t.Errorf("%s = %d, want %d", k, g, v)
		}
	}
}
