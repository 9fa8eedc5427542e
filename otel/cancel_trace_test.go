package otel

import (
	"context"
	"errors"
	"testing"

	"github.com/cacheguard/cacheguard/cache"
	"go.opentelemetry.io/otel/codes"
)

// Calls that fail before any tier still end their span, marked as errors;
// a failing loader marks its own span.
func TestTraceOfFailedCalls(t *testing.T) {
	srv := startRedis(t)
	exp, tp, mp := tracing(t)
	c := tracedCache(t, srv, tp, mp, "users", cache.WithPrefix("f:"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "v", nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context = %v", err)
	}
	if _, err := c.GetMany(context.Background(), []string{""}, func(context.Context, []string) (map[string]string, error) { return nil, nil }); !errors.Is(err, cache.ErrInvalidArgument) {
		t.Fatalf("GetMany with an empty key = %v", err)
	}
	boom := errors.New("database down")
	if _, err := c.Get(context.Background(), "k", func(context.Context, string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("Get with a failing loader = %v", err)
	}
	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4 (Get, GetMany, load, Get): %v", len(spans), spans)
	}
	for i, want := range []struct{ name, tier string }{{"cacheguard.Get", "none"}, {"cacheguard.GetMany", "none"}, {"cacheguard.load", ""}, {"cacheguard.Get", "loader"}} {
		s := spans[i]
		if s.Name != want.name || attr(s, AttrTier) != want.tier || s.Status.Code != codes.Error {
			t.Errorf("span %d = %s tier %q status %v; want %s tier %q, an error", i, s.Name, attr(s, AttrTier), s.Status.Code, want.name, want.tier)
		}
	}
	if attr(spans[2], AttrOutcome) != "error" {
		t.Errorf("failed load outcome = %q", attr(spans[2], AttrOutcome))
	}
}
