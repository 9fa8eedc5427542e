package cache

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// nearExpiry makes c believe it is just before every entry's expiry and
// rolls the XFetch dice low, so the next hit refreshes.
func nearExpiry[V any](c *Cache[V], ttl time.Duration) {
	c.hooks().Now = func() time.Time { return time.Now().Add(ttl * 2) }
	c.hooks().Rand = func() float64 { return 1e-9 }
}

func TestEarlyRefreshReloadsBeforeExpiry(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb, WithEarlyRefresh(1), WithJitter(0))
		version := "v1"
		load := func(context.Context, string) (string, error) { return version, nil }
		if v, _ := c.Get(ctx, "k", load); v != "v1" {
			t.Fatal(v)
		}
		// Far from expiry, with an ordinary roll: no refresh.
		c.hooks().Rand = func() float64 { return 0.5 }
		c.Get(ctx, "k", load)
		if c.Stats().EarlyRefresh != 0 {
			t.Fatal("refreshed far from expiry")
		}
		filled := make(chan bool, 1)
		c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		nearExpiry(c, 10*time.Minute)
		version = "v2"
		if v, _ := c.Get(ctx, "k", load); v != "v1" {
			t.Fatalf("the hit that triggers a refresh serves the current value, got %q", v)
		}
		if ok := <-filled; !ok {
			t.Fatal("refresh fill refused")
		}
		c.hooks().Now, c.hooks().Rand = nil, func() float64 { return 0.5 }
		if v, _ := c.Get(ctx, "k", load); v != "v2" {
			t.Fatalf("after refresh got %q, want v2", v)
		}
		if pttl := rdb.PTTL(ctx, prefixFor(t)+"k").Val(); pttl < 9*time.Minute {
			t.Fatalf("refreshed entry PTTL %v, want a fresh TTL", pttl)
		}
	})
}

// A Delete while a refresh loads wins: the refreshed value is refused.
func TestDeleteDuringRefreshRejectsIt(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb, WithEarlyRefresh(1))
		c.Get(ctx, "k", func(context.Context, string) (string, error) { return "old", nil })
		entered, release := make(chan struct{}), make(chan struct{})
		filled := make(chan bool, 1)
		c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		nearExpiry(c, 10*time.Minute)
		c.Get(ctx, "k", func(context.Context, string) (string, error) {
			close(entered)
			<-release
			return "stale refresh", nil
		})
		<-entered
		if err := c.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		close(release)
		if ok := <-filled; ok {
			t.Fatal("refresh landed after Delete")
		}
		if rdb.Exists(ctx, prefixFor(t)+"k").Val() != 0 {
			t.Fatal("stale refresh written back")
		}
	})
}

// While one instance refreshes a key, another does not start a second load.
func TestRefreshIsMarkedAcrossInstances(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a := newCache[string](t, rdb, WithEarlyRefresh(1))
		b := newCache[string](t, rdb, WithEarlyRefresh(1), WithPrefix(prefixFor(t)))
		a.Get(ctx, "k", func(context.Context, string) (string, error) { return "v", nil })
		started, release := make(chan struct{}), make(chan struct{})
		filled := make(chan bool, 1)
		a.hooks().OnRefresh = func(string) { close(started) }
		a.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		nearExpiry(a, 10*time.Minute)
		nearExpiry(b, 10*time.Minute)
		a.Get(ctx, "k", func(context.Context, string) (string, error) { <-release; return "v2", nil })
		<-started
		if v, err := b.Get(ctx, "k", func(context.Context, string) (string, error) {
			t.Error("second instance loaded during a marked refresh")
			return "", nil
		}); err != nil || v != "v" {
			t.Fatalf("b.Get = %q, %v", v, err)
		}
		if b.Stats().EarlyRefresh != 0 {
			t.Fatal("second instance started a refresh")
		}
		close(release)
		if !<-filled {
			t.Fatal("refresh refused")
		}
	})
}
