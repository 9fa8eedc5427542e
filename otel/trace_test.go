package otel

import (
	"context"
	"testing"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func attr(s tracetest.SpanStub, k string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

// tracing returns an in-memory span exporter and the providers the trace
// tests observe through, shut down when the test ends.
func tracing(t *testing.T, opts ...sdkmetric.Option) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider, *sdkmetric.MeterProvider) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	mp := sdkmetric.NewMeterProvider(opts...)
	t.Cleanup(func() {
		tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	return exp, tp, mp
}

// tracedCache returns a Cache on srv observed by an Observer named name,
// closed when the test ends.
func tracedCache(t *testing.T, srv *redistest.Server, tp *sdktrace.TracerProvider, mp *sdkmetric.MeterProvider, name string, opts ...cache.Option) *cache.Cache[string] {
	obs, err := NewObserver(name, tp, mp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(newClient(t, srv), cache.Values[string]{}, append(opts, cache.WithObserver(obs))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTraceOfAMissHasTheLoaderAsChild(t *testing.T) {
	srv := startRedis(t)
	reader := sdkmetric.NewManualReader()
	exp, tp, mp := tracing(t, sdkmetric.WithReader(reader))
	c := tracedCache(t, srv, tp, mp, "users", cache.WithPrefix("t:"))
	ctx := context.Background()
	load := func(context.Context, string) (string, error) { return "v", nil }

	if _, err := c.Get(ctx, "k", load); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("a miss made %d spans, want 2 (Get and load): %v", len(spans), spans)
	}
	load0, get := spans[0], spans[1] // ended in this order
	if get.Name != "cacheguard.Get" || load0.Name != "cacheguard.load" {
		t.Fatalf("spans %q, %q; want cacheguard.load then cacheguard.Get", load0.Name, get.Name)
	}
	if load0.Parent.SpanID() != get.SpanContext.SpanID() || load0.SpanContext.TraceID() != get.SpanContext.TraceID() {
		t.Errorf("the load span is not a child of the Get span")
	}
	if tier := attr(get, AttrTier); tier != "loader" {
		t.Errorf("tier of a miss = %q, want loader", tier)
	}
	if k := attr(get, AttrKey); k != "k" {
		t.Errorf("key attribute = %q", k)
	}
	if o := attr(load0, AttrOutcome); o != "ok" {
		t.Errorf("load outcome = %q, want ok", o)
	}

	// The next read is answered by Redis, with no load span.
	exp.Reset()
	if _, err := c.Get(ctx, "k", load); err != nil {
		t.Fatal(err)
	}
	spans = exp.GetSpans()
	if len(spans) != 1 || attr(spans[0], AttrTier) != "redis" {
		t.Fatalf("a hit made spans %v, want one Get span with tier redis", spans)
	}

	// GetMany: one span, the batch loader as its child.
	exp.Reset()
	if _, err := c.GetMany(ctx, []string{"k", "x", "y"}, func(_ context.Context, ks []string) (map[string]string, error) {
		m := map[string]string{}
		for _, k := range ks {
			m[k] = k
		}
		return m, nil
	}); err != nil {
		t.Fatal(err)
	}
	spans = exp.GetSpans()
	if len(spans) != 2 || spans[1].Name != "cacheguard.GetMany" || spans[0].Name != "cacheguard.load" {
		t.Fatalf("GetMany spans = %v", spans)
	}
	if spans[0].Parent.SpanID() != spans[1].SpanContext.SpanID() {
		t.Errorf("the batch load span is not a child of the GetMany span")
	}
	if attr(spans[0], AttrKeys) != "2" || attr(spans[1], AttrTier) != "loader" {
		t.Errorf("GetMany: load keys = %s, tier = %s; want 2, loader", attr(spans[0], AttrKeys), attr(spans[1], AttrTier))
	}

	got := collect(t, reader)
	if n := got[MetricLoadDuration+"{outcome=ok}.count"]; n != 2 {
		t.Errorf("load duration count = %d, want 2", n)
	}
	if n := got[MetricGetDuration+"{op=Get,tier=redis}.count"]; n != 1 {
		t.Errorf("Get duration count for redis = %d, want 1", n)
	}
}
