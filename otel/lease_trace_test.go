package otel

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The span tree of a miss across two caches: the one that loads has the
// load span as its child; the other's Get span says it waited for the lease
// (and how long) and has no load. A later hit that starts an early refresh
// says so.
func TestTraceOfAMissWithALeaseWait(t *testing.T) {
	srv := startRedis(t)
	exp, tp, mp := tracing(t)
	ctx := context.Background()
	newCache := func(name string, opts ...cache.Option) *cache.Cache[string] {
		return tracedCache(t, srv, tp, mp, name, append([]cache.Option{cache.WithPrefix("lt:")}, opts...)...)
	}
	// The test is about the spans' shape, not about timing: a lease and a
	// wait budget far past any stall of a loaded machine, so that b never
	// gives up waiting (the default budget is 4 s) and a's lease never lapses
	// for want of a renewal (default 3 s) while the test holds the load.
	patient := []cache.Option{cache.WithFillLease(time.Minute), cache.WithWait(2 * time.Minute)}
	a, b := newCache("a", patient...), newCache("b", patient...)

	loading, release := make(chan struct{}), make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Get(ctx, "k", func(context.Context, string) (string, error) {
			close(loading)
			<-release
			return "v", nil
		})
		aDone <- err
	}()
	<-loading
	bDone := make(chan error, 1)
	go func() {
		_, err := b.Get(ctx, "k", func(context.Context, string) (string, error) {
			return "", errors.New("b must not load")
		})
		bDone <- err
	}()
	until(t, "b waits", func() bool { return b.Stats().LeaseWaits == 1 })
	close(release)
	if err := errors.Join(<-aDone, <-bDone); err != nil {
		t.Fatal(err)
	}

	byCache := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byCache[attr(s, AttrCache)+"/"+s.Name] = append(byCache[attr(s, AttrCache)+"/"+s.Name], s)
	}
	aGet, aLoad, bGet := byCache["a/cacheguard.Get"], byCache["a/cacheguard.load"], byCache["b/cacheguard.Get"]
	if len(aGet) != 1 || len(aLoad) != 1 || len(bGet) != 1 || len(byCache["b/cacheguard.load"]) != 0 {
		t.Fatalf("spans %v; want a Get and a load for a, one Get for b", byCache)
	}
	if aLoad[0].Parent.SpanID() != aGet[0].SpanContext.SpanID() {
		t.Error("a's load span is not a child of its Get span")
	}
	if attr(aGet[0], AttrTier) != "loader" || attr(aGet[0], AttrLeaseWaited) != "false" {
		t.Errorf("a's Get: tier %s, waited %s; want loader, false", attr(aGet[0], AttrTier), attr(aGet[0], AttrLeaseWaited))
	}
	if attr(bGet[0], AttrTier) != "fill" || attr(bGet[0], AttrLeaseWaited) != "true" || attr(bGet[0], AttrCoalesced) != "false" {
		t.Errorf("b's Get: tier %s, waited %s, coalesced %s; want fill, true, false",
			attr(bGet[0], AttrTier), attr(bGet[0], AttrLeaseWaited), attr(bGet[0], AttrCoalesced))
	}
	if w, err := strconv.ParseFloat(attr(bGet[0], AttrLeaseWait), 64); err != nil || w <= 0 {
		t.Errorf("b's lease wait attribute %q, want > 0 seconds", attr(bGet[0], AttrLeaseWait))
	}
	if attr(bGet[0], AttrEarlyRefresh) != "false" {
		t.Errorf("b's Get started an early refresh")
	}

	// A hit on a cache whose XFetch always fires starts an early refresh.
	refreshed := make(chan struct{}, 1)
	c := newCache("c", cache.WithEarlyRefresh(1e12))
	exp.Reset()
	if _, err := c.Get(ctx, "k", func(context.Context, string) (string, error) {
		refreshed <- struct{}{}
		return "v2", nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-refreshed:
	case <-time.After(10 * time.Second):
		t.Fatal("the early refresh never ran")
	}
	var get tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "cacheguard.Get" {
			get = s
		}
	}
	if attr(get, AttrTier) != "redis" || attr(get, AttrEarlyRefresh) != "true" {
		t.Errorf("hit with XFetch firing: tier %s, early_refresh %s; want redis, true", attr(get, AttrTier), attr(get, AttrEarlyRefresh))
	}
}
