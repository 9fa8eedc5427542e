package otel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/cacheguard/cacheguard/cache"
	cgotel "github.com/cacheguard/cacheguard/otel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Wiring a cache to Prometheus: the exporter is the meter provider's reader,
// RegisterCache publishes the Stats counters, and the Observer adds spans and
// latency histograms. In a service, mux.Handle("/metrics", ...) replaces the
// test server.
func Example_prometheus() {
	mr, _ := miniredis.Run() // a real Redis address in production
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		panic(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	tp := sdktrace.NewTracerProvider() // add a span exporter (OTLP, ...) here
	defer tp.Shutdown(context.Background())

	obs, err := cgotel.NewObserver("users", tp, mp)
	if err != nil {
		panic(err)
	}
	users, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("user:"), cache.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer users.Close()
	stats, err := cgotel.RegisterCache(mp.Meter(cgotel.ScopeName), "users", users)
	if err != nil {
		panic(err)
	}
	defer stats.Unregister()

	load := func(ctx context.Context, id string) (string, error) { return "user " + id, nil }
	users.Get(context.Background(), "42", load) // a miss: one load
	users.Get(context.Background(), "42", load) // a hit from Redis

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "cacheguard_cache_hits_total") || strings.HasPrefix(line, "cacheguard_cache_loads_total") {
			fmt.Println(line[:strings.Index(line, "{")], line[strings.LastIndex(line, " ")+1:])
		}
	}
	// Unordered output:
	// cacheguard_cache_hits_total 0
	// cacheguard_cache_hits_total 1
	// cacheguard_cache_loads_total 0
	// cacheguard_cache_loads_total 1
}
