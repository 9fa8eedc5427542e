package otel

import (
	"time"

	"context"
	"encoding/json"
	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/hotkey"
	"github.com/cacheguard/cacheguard/lock"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// scrape runs a workload through a cache and a queue wired to the Prometheus
// exporter and returns the metric family names /metrics serves.
func scrape(t *testing.T) map[string]bool {
	t.Helper()
	srv := startRedis(t)
	rdb := newClient(t, srv)
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	obs, err := NewObserver("users", tp, mp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(rdb, cache.Values[string]{}, cache.WithPrefix("p:"), cache.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := RegisterCache(mp.Meter(ScopeName), "users", c); err != nil {
		t.Fatal(err)
	}
	q, err := consistency.New(rdb, consistency.WithPrefix("pq"))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := RegisterQueue(mp.Meter(ScopeName), "orders", q); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := c.Get(ctx, "a", func(context.Context, string) (string, error) { return "v", nil }); err != nil {
			t.Fatal(err)
		}
	}

	// The instruments fed by events, each given one: a lease wait (told
	// to the Observer as the read path would), a lock held, released and
	// lost; and the Stats-fed ones of filters, detectors and binlog sources.
	_, end := obs.StartGet(ctx, "Get", []string{"w"})
	end(cache.GetInfo{Tier: cache.TierFill, LeaseWaited: true, LeaseWait: time.Millisecond})
	lobs, err := NewLockObserver("orders", mp)
	if err != nil {
		t.Fatal(err)
	}
	lobs.Acquired("m", time.Millisecond)
	lobs.Released("m", time.Millisecond)
	lobs.Lost("m")
	meter := mp.Meter(ScopeName)
	lc, err := lock.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	bf, err := bloom.NewLocal(100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	det, err := hotkey.New(hotkey.WithClock(time.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer det.Close()
	for _, err := range []error{
		second(RegisterLockStats(meter, "orders", lc)),
		second(RegisterBloom(meter, "users", bf)),
		second(RegisterHotKeys(meter, "users", det)),
		second(RegisterBinlog(meter, "orders", func() BinlogStats { return BinlogStats{Lag: time.Second} })),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	h := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer h.Close()
	resp, err := http.Get(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			names[f[0]] = true
			if f[1] == "histogram" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[0]+s] = true
				}
			}
		}
	}
	return names
}

var (
	promName = regexp.MustCompile(`cacheguard_[a-z_]+`)
	// Label names (cacheguard_cache, cacheguard_queue) appear only inside
	// selectors and grouping clauses: those are cut out before matching.
	promLabels = regexp.MustCompile(`\{[^}]*\}|\b(by|without) \([^)]*\)`)
)

// TestDashboardQueriesOnlyEmittedMetrics pins the Grafana dashboard to the
// names the exporter really serves, and the documented names to the ones
// registered: renaming a metric breaks this test, not a production panel.
func TestDashboardQueriesOnlyEmittedMetrics(t *testing.T) {
	emitted := scrape(t)
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
	queried := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := promName.FindAllString(promLabels.ReplaceAllString(tg.Expr, ""), -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no cacheguard metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				queried++
				if !emitted[n] {
					t.Errorf("panel %q queries %s, which the exporter does not serve", p.Title, n)
				}
			}
		}
	}
	if queried == 0 {
		t.Fatal("the dashboard queries nothing")
	}
	var served []string
	for n := range emitted {
		if strings.HasPrefix(n, "cacheguard_") {
			served = append(served, n)
		}
	}
	sort.Strings(served)
	t.Logf("served: %v", served)
}

func second[T any](_ T, err error) error { return err }
