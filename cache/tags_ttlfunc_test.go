package cache

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// An entry whose TTL func gives it longer than WithTTL stays invalidated by
// its tag for as long as it lives: the tag's time must outlive it, so a
// tagged entry lives at most WithTTL (jittered).
func TestTagInvalidationOutlivedByTTLFuncEntry(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	ctx := context.Background()
	c := newCacheWith(t, rdb, Values[string]{TTL: func(string, string) time.Duration { return time.Minute }, Tags: orgOf},
		WithTTL(50*time.Millisecond), WithLoadTimeout(50*time.Millisecond))
	if err := c.Set(ctx, "k", "org1:v1"); err != nil {
		t.Fatal(err)
	}
	if err := c.InvalidateTags(ctx, "org1"); err != nil {
		t.Fatal(err)
	}
	tagKey := wire.TagKey(prefixFor(t), "org1")
	waitFor(t, func() bool { n, err := rdb.Exists(ctx, tagKey).Result(); return err == nil && n == 0 })
	v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "org1:v2", nil })
	if err != nil || v != "org1:v2" {
		t.Fatalf("Get = %q, %v after the tag's key expired; want the reload org1:v2", v, err)
	}
}
