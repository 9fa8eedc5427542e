package otel

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/hotkey"
	"github.com/cacheguard/cacheguard/lock"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace/noop"
)

// points reads every point as name{every attribute} -> value; histograms
// give name{...}.count and name{...}.sum.
func points(t *testing.T, r *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	all := func(s attribute.Set) string {
		k := ""
		for _, kv := range s.ToSlice() {
			k += "," + string(kv.Key) + "=" + kv.Value.Emit()
		}
		if k == "" {
			return ""
		}
		return "{" + k[1:] + "}"
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+all(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+all(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+all(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+all(p.Attributes)+".count"] += float64(p.Count)
					out[m.Name+all(p.Attributes)+".sum"] += p.Sum
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+all(p.Attributes)+".count"] += float64(p.Count)
					out[m.Name+all(p.Attributes)+".sum"] += float64(p.Sum)
				}
			}
		}
	}
	return out
}

// until polls cond (a counter another goroutine moves) up to a deadline.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached", what)
		}
		time.Sleep(time.Millisecond) // polling a counter, not ordering events
	}
}

// A scripted workload read back through the manual reader: hits, a stampede
// across two caches (one waits for the other's lease), an outage that opens
// the breaker, a contended lock that is lost, a Bloom filter and a hot-key
// detector.
func TestMetricsOfAScriptedWorkload(t *testing.T) {
	srv := startRedis(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	meter := mp.Meter(ScopeName)
	tp := noop.NewTracerProvider()
	ctx := context.Background()

	newCache := func(name string, opts ...cache.Option) *cache.Cache[string] {
		obs, err := NewObserver(name, tp, mp)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cache.New(newClient(t, srv), cache.Values[string]{}, append([]cache.Option{cache.WithPrefix("w:"), cache.WithObserver(obs)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		reg, err := RegisterCache(meter, name, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Unregister() })
		return c
	}
	a := newCache("a", cache.WithCircuitBreaker(2, time.Hour), cache.WithFallbackLoads(4))
	b := newCache("b")

	// Hits: a miss then two Redis hits on a.
	load := func(context.Context, string) (string, error) { return "value", nil }
	for range 3 {
		if _, err := a.Get(ctx, "k", load); err != nil {
			t.Fatal(err)
		}
	}

	// A stampede across two caches: a loads "hot" and holds its lease until
	// b, in another "process", is seen waiting for it.
	loading, release := make(chan struct{}), make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Get(ctx, "hot", func(context.Context, string) (string, error) {
			close(loading)
			<-release
			return "h", nil
		})
		aDone <- err
	}()
	<-loading
	bDone := make(chan error, 1)
	go func() {
		_, err := b.Get(ctx, "hot", func(context.Context, string) (string, error) {
			return "", errors.New("b must not load: a holds the lease")
		})
		bDone <- err
	}()
	until(t, "b waits for a's lease", func() bool { return b.Stats().LeaseWaits == 1 })
	close(release)
	if err := errors.Join(<-aDone, <-bDone); err != nil {
		t.Fatal(err)
	}

	// Locks: b-side waits for a-side, then its lock vanishes and is lost.
	lobs, err := NewLockObserver("orders", mp)
	if err != nil {
		t.Fatal(err)
	}
	la, err := lock.New(newClient(t, srv), lock.WithObserver(lobs))
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	lb, err := lock.New(newClient(t, srv), lock.WithObserver(lobs))
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if _, err := RegisterLockStats(meter, "orders", lb); err != nil {
		t.Fatal(err)
	}
	ha, err := la.Mutex("m").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lb.Mutex("m").TryLock(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	got := make(chan *lock.Handle, 1)
	go func() {
		h, err := lb.Mutex("m").Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	if err := ha.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	hb := <-got
	if hb == nil {
		t.FailNow()
	}
	if err := newClient(t, srv).Del(ctx, lock.DefaultPrefix+"{m}").Err(); err != nil {
		t.Fatal(err)
	}
	if err := hb.Unlock(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Unlock of a vanished lock: %v, want ErrNotHeld", err)
	}

	// A Bloom filter half full, and a detector with one hot key.
	bf, err := bloom.NewRedis(ctx, newClient(t, srv), "users", 1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	lf, err := bloom.NewLocal(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		k := fmt.Sprint("u", i)
		if err := errors.Join(bf.Add(ctx, k), lf.Add(ctx, k)); err != nil {
			t.Fatal(err)
		}
	}
	sharedReg, err := RegisterBloom(meter, "shared", bf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterBloom(meter, "local", lf); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	det, err := hotkey.New(hotkey.WithClock(func() time.Time { return now }), hotkey.WithMinCount(10))
	if err != nil {
		t.Fatal(err)
	}
	defer det.Close()
	for range 50 {
		det.Record("celebrity")
	}
	now = now.Add(100 * time.Millisecond)
	det.Tick()
	if _, err := RegisterHotKeys(meter, "users", det); err != nil {
		t.Fatal(err)
	}

	p := points(t, reader)
	expect := func(name string, want float64) {
		t.Helper()
		if got := p[name]; got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	expect(MetricHits+"{cacheguard.cache=a,tier=redis}", 2)
	expect(MetricLeaseWaits+"{cacheguard.cache=b}", 1)
	expect(MetricLeaseWaitDuration+"{cacheguard.cache=b}.count", 1)
	if s := p[MetricLeaseWaitDuration+"{cacheguard.cache=b}.sum"]; s <= 0 {
		t.Errorf("lease wait of b = %vs, want > 0", s)
	}
	expect(MetricLeaseWaitDuration+"{cacheguard.cache=a}.count", 0)
	expect(MetricBreakerState+"{cacheguard.cache=a}", 0)
	// Sizes: a wrote "k" and "hot"; a read "k" twice, b read "hot".
	expect(MetricValueSize+"{cacheguard.cache=a,op=write}.count", 2)
	expect(MetricValueSize+"{cacheguard.cache=a,op=read}.count", 2)
	expect(MetricValueSize+"{cacheguard.cache=b,op=read}.count", 1)
	expect(MetricLockWaitDuration+"{cacheguard.locks=orders}.count", 2)
	expect(MetricLockHoldDuration+"{cacheguard.locks=orders}.count", 2)
	expect(MetricLockLost+"{cacheguard.locks=orders}", 1)
	expect(MetricLockPanics+"{cacheguard.locks=orders}", 0)
	for _, f := range []string{"shared", "local"} {
		r := p[MetricBloomFillRatio+"{cacheguard.bloom="+f+"}"]
		if r < 0.25 || r > 0.35 { // 1 - e^(-kn/m): 1/2 at the sized n, 1 - 2^(-1/2) at half of it
			t.Errorf("%s fill ratio %v, want about 0.5", f, r)
		}
	}
	expect(MetricHotKeysPromoted+"{cacheguard.hotkeys=users}", 1)
	expect(MetricHotKeysHot+"{cacheguard.hotkeys=users}", 1)

	// The outage: Redis goes away; two failures open a's breaker, and
	// reads are answered by fallback loads. (The shared filter's gauge
	// would fail the collection: it needs Redis.)
	sharedReg.Unregister()
	srv.Kill()
	for i := range 3 {
		if v, err := a.Get(ctx, fmt.Sprint("down", i), load); err != nil || v != "value" {
			t.Fatalf("Get during the outage = %q, %v; want a fallback load", v, err)
		}
	}
	p = points(t, reader)
	expect(MetricBreakerState+"{cacheguard.cache=a}", float64(cache.BreakerOpen))
	if n := p[MetricBreakerRejects+"{cacheguard.cache=a}"]; n < 1 {
		t.Errorf("breaker rejects = %v, want at least 1", n)
	}
	expect(MetricFallbackLoads+"{cacheguard.cache=a}", 3)
}
