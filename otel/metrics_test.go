package otel

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cacheguard/cacheguard/cache"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collect reads every int64 sum and gauge point (float64 gauges in
// millionths) as name{attr=value,...} -> value.
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
			case metricdata.Gauge[float64]: // in millionths
				for _, p := range d.DataPoints {
					out[m.Name+key(p.Attributes)] = int64(math.Round(p.Value * 1e6))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+key(p.Attributes)+".count"] += int64(p.Count)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+key(p.Attributes)+".count"] += int64(p.Count)
				}
			}
			for _, p := range points {
				out[m.Name+key(p.Attributes)] = p.Value
			}
		}
	}
	return out
}

// key renders the attributes other than the name of what is measured, sorted.
func key(s attribute.Set) string {
	k := ""
	for _, kv := range s.ToSlice() {
		switch kv.Key {
		case AttrCache, AttrQueue, AttrBloom, AttrHotKeys, AttrLocks, AttrBinlog:
			continue
		}
		k += "," + string(kv.Key) + "=" + kv.Value.Emit()
	}
	if k == "" {
		return ""
	}
	return "{" + k[1:] + "}"
}

func TestCacheMetricsAfterWorkload(t *testing.T) {
	srv := startRedis(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	c, err := cache.New(newClient(t, srv), cache.Values[string]{}, cache.WithPrefix("m:"), cache.WithFallbackLoads(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg, err := RegisterCache(mp.Meter(ScopeName), "users", c)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	ctx := context.Background()

	// A miss, then two hits from Redis.
	load := func(context.Context, string) (string, error) { return "v", nil }
	for range 3 {
		if _, err := c.Get(ctx, "a", load); err != nil {
			t.Fatal(err)
		}
	}
	// An absent row, cached: the second read is a null hit.
	absent := func(context.Context, string) (string, error) { return "", cache.ErrNotFound }
	for range 2 {
		if _, err := c.Get(ctx, "gone", absent); !errors.Is(err, cache.ErrNotFound) {
			t.Fatalf("Get(gone) = %v, want ErrNotFound", err)
		}
	}
	// A stampede on a cold key: 32 callers, one load. The loader holds
	// until every caller has started, so most of them share its fill.
	var calls atomic.Int32
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(32)
	done.Add(32)
	for range 32 {
		go func() {
			defer done.Done()
			started.Done()
			_, err := c.Get(ctx, "hot", func(context.Context, string) (string, error) {
				calls.Add(1)
				<-release
				return "h", nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	started.Wait()
	close(release)
	done.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("stampede ran the loader %d times, want 1", n)
	}

	got := collect(t, reader)
	want := map[string]int64{
		MetricLoads + "{outcome=ok}":    3, // a, gone (ErrNotFound is not a failure), hot
		MetricLoads + "{outcome=error}": 0,
		MetricNullHits:                  1,
		MetricRedisErrors:               0,
		MetricFallbackLoads:             0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	if h := got[MetricHits+"{tier=redis}"]; h < 2 {
		t.Errorf("redis hits = %d, want at least 2", h)
	}
	if got[MetricHits+"{tier=local}"] != 0 {
		t.Errorf("local hits without a local tier: %d", got[MetricHits+"{tier=local}"])
	}
	if m := got[MetricMisses]; m < 3 {
		t.Errorf("misses = %d, want at least 3 (a, gone, hot)", m)
	}

	// An outage: Redis goes away, a read fails over to one fallback load.
	srv.Kill()
	if v, err := c.Get(ctx, "during", func(context.Context, string) (string, error) { return "db", nil }); err != nil || v != "db" {
		t.Fatalf("Get during the outage = %q, %v; want the fallback load", v, err)
	}
	got = collect(t, reader)
	if got[MetricRedisErrors] < 1 {
		t.Errorf("%s = %d after the outage, want at least 1", MetricRedisErrors, got[MetricRedisErrors])
	}
	if got[MetricFallbackLoads] != 1 {
		t.Errorf("%s = %d after the outage, want 1", MetricFallbackLoads, got[MetricFallbackLoads])
	}
}
