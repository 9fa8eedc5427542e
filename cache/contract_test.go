package cache

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestRedisGoneContract: with Redis gone (and no fallback loads), every
// call fails with an error matching ErrRedis that names the
// prefix once, and the loader is not called.
func TestRedisGoneContract(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := fastFailClient(t, srv.Addr)
	c := newCache[string](t, rdb, WithTTL(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	loads := 0
	load := func(context.Context, string) (string, error) { loads++; return "v", nil }
	_, err := c.Get(ctx, "k", load)
	apicheck.RedisFailure(t, ErrRedis, "Get", err)
	_, err = c.GetMany(ctx, []string{"a", "b"}, func(context.Context, []string) (map[string]string, error) {
		loads++
		return nil, nil
	})
	apicheck.RedisFailure(t, ErrRedis, "GetMany", err)
	apicheck.RedisFailure(t, ErrRedis, "Set", c.Set(ctx, "k", "v"))
	apicheck.RedisFailure(t, ErrRedis, "Delete", c.Delete(ctx, "k"))
	apicheck.RedisFailure(t, ErrRedis, "InvalidateTags", c.InvalidateTags(ctx, "t"))
	// A cache made while Redis is gone: its first sync of the generation
	// fails, and so do the calls that wait for it.
	fresh := newCache[string](t, rdb, WithPrefix("contract-fresh:"))
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	apicheck.RedisFailure(t, ErrRedis, "Ready", fresh.Ready(short))
	_, err = fresh.Get(ctx, "k", load)
	apicheck.RedisFailure(t, ErrRedis, "Get before the first sync", err)
	if loads != 0 {
		t.Errorf("the loader ran %d times with Redis gone", loads)
	}
}
