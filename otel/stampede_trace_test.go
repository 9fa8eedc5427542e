package otel

import (
	"context"
	"sync"
	"testing"

	"github.com/cacheguard/cacheguard/cache"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A stampede shows one Get whose loader ran (the load span its child) and
// every other caller answered by that fill or, arriving after it, by Redis.
func TestTraceOfAStampede(t *testing.T) {
	srv := startRedis(t)
	exp, tp, mp := tracing(t)
	c := tracedCache(t, srv, tp, mp, "users", cache.WithPrefix("s:"))

	const n = 16
	release := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			started.Done()
			if _, err := c.Get(context.Background(), "hot", func(context.Context, string) (string, error) {
				<-release
				return "h", nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	started.Wait()
	close(release)
	done.Wait()

	var loads, loaders []tracetest.SpanStub
	tiers := map[string]int{}
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "cacheguard.load":
			loads = append(loads, s)
		case "cacheguard.Get":
			tier := attr(s, AttrTier)
			tiers[tier]++
			// A caller answered by its GET shared no fill. (One with tier
			// fill may have shared the loader's, or started its own fill
			// just after and found the value there.)
			co := attr(s, AttrCoalesced)
			if tier == "redis" && co != "false" {
				t.Errorf("Get span tier %s has coalesced=%s", tier, co)
			}
			if tier == "loader" {
				loaders = append(loaders, s)
			}
		}
	}
	if len(loads) != 1 || len(loaders) != 1 {
		t.Fatalf("%d load spans and %d Get spans with tier loader, want 1 and 1 (tiers %v)", len(loads), len(loaders), tiers)
	}
	if loads[0].Parent.SpanID() != loaders[0].SpanContext.SpanID() {
		t.Error("the load span is not a child of the Get whose loader ran")
	}
	if tiers["fill"]+tiers["redis"] != n-1 {
		t.Errorf("tiers %v: want the %d other callers answered by the fill or Redis", tiers, n-1)
	}
}
