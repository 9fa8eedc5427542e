package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// What a redis.Ring can promise, shown: a Delete made while the key's shard
// is down lands on the shard standing in for it, so when the shard returns
// with its data, the entry it held before the outage is served again until
// its TTL runs out. The cache cannot make such a Delete durable (the README
// says so and what to do about it).
func TestRingDeleteDuringShardOutageIsUndone(t *testing.T) {
	redistest.NeedServer(t)
	persist := []string{"appendonly", "yes", "appendfsync", "always"}
	a, b := redistest.Start(t, persist...), redistest.Start(t, persist...)
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:              map[string]string{"a": a.Addr, "b": b.Addr},
		HeartbeatFrequency: 50 * time.Millisecond,
		MaxRetries:         -1,
		DialTimeout:        100 * time.Millisecond,
	})
	t.Cleanup(func() { ring.Close() })
	ctx := context.Background()
	c := newCache[string](t, ring)
	p := prefixFor(t)
	direct := a.Client()
	key := ""
	for i := 0; i < 100 && key == ""; i++ {
		k := fmt.Sprint("k", i)
		if _, err := c.Get(ctx, k, func(context.Context, string) (string, error) { return "old", nil }); err != nil {
			t.Fatal(err)
		}
		if direct.Exists(ctx, p+k).Val() == 1 {
			key = k
		}
	}
	if key == "" {
		t.Fatal("no key landed on shard a")
	}
	a.Kill()
	// Wait (polling a condition) until the ring routes the key to b.
	waitFor(t, func() bool { return errors.Is(ring.Get(ctx, p+key).Err(), redis.Nil) })
	if err := c.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	a.Restart()
	waitFor(t, func() bool { return ring.Get(ctx, p+key).Err() == nil })
	v, err := c.Get(ctx, key, func(context.Context, string) (string, error) { return "new", nil })
	if err != nil || v != "old" {
		t.Fatalf("Get after the shard returned = %q, %v; the documented behaviour is the pre-outage entry", v, err)
	}
}

// waitFor polls cond (a state outside the process, such as a ring's view of
// its shards) until it holds, failing after a generous bound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A local tier on a Ring: its invalidation channel is subscribed on the
// channel's shard, and a Delete on one instance reaches the other's tier.
func TestRingLocalTier(t *testing.T) {
	redistest.NeedServer(t)
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}})
	t.Cleanup(func() { ring.Close() })
	ctx := context.Background()
	w, r := localCache(t, ring), localCache(t, ring)
	rows := map[string]string{"k": "v1"}
	load := func(_ context.Context, k string) (string, error) { return rows[k], nil }
	if v, err := r.Get(ctx, "k", load); err != nil || v != "v1" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	rows["k"] = "v2"
	if err := w.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { v, err := r.Get(ctx, "k", load); return err == nil && v == "v2" })
}

// A Clear on one instance reaches another without a local tier on a Ring:
// both subscribe to the invalidation channel on its shard.
func TestRingClearReachesOtherInstance(t *testing.T) {
	redistest.NeedServer(t)
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr, "b": b.Addr}})
	t.Cleanup(func() { ring.Close() })
	ctx := context.Background()
	moved := make(chan uint64, 4)
	w := newCache[string](t, ring)
	r := newCache[string](t, ring, withHooks(&hooks{OnGeneration: func(g uint64) { moved <- g }}))
	<-r.bus.Subscribed()
	if err := w.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-moved:
	case <-time.After(10 * time.Second):
		t.Fatal("the other instance never moved to the new generation")
	}
	if r.keys.Gen() != w.keys.Gen() {
		t.Fatalf("generations %d and %d", r.keys.Gen(), w.keys.Gen())
	}
}
