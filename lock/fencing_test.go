package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

func fencingTests(t *testing.T, rdb redis.UniversalClient) {
	t.Run("tokens survive a lost counter", func(t *testing.T) { testFencingSurvivesLoss(t, rdb) })
	t.Run("idle lock leaves no key", func(t *testing.T) { testIdleLockNoKeys(t, rdb) })
	t.Run("SetFenced", func(t *testing.T) { testSetFenced(t, rdb) })
}

// takeToken takes a lock, returns its token and releases it.
func takeToken(t testing.TB, lock func(context.Context) (*Handle, error)) int64 {
	t.Helper()
	ctx := testCtx(t)
	h, err := lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok := h.Token()
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return tok
}

func flushAll(t testing.TB, rdb redis.UniversalClient) {
	t.Helper()
	redistest.EachMaster(t, rdb, func(ctx context.Context, c *redis.Client) error {
		return c.FlushAll(ctx).Err()
	})
}

// testFencingSurvivesLoss: the fencing counter is evicted, then everything is
// flushed; each following holder still gets a larger token, for a Mutex and
// for the writer of an RWMutex.
func testFencingSurvivesLoss(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb)
	m, rw := c.Mutex("fence-loss"), c.RWMutex("fence-loss-rw")
	for _, lock := range []func(context.Context) (*Handle, error){m.Lock, rw.Lock} {
		t1 := takeToken(t, lock)
		// The counters are evicted: a free Mutex keeps its token in its hash.
		rdb.Del(ctx, "cacheguard:lock:{fence-loss}")
		rdb.Del(ctx, "cacheguard:lock:{fence-loss-rw}:fence")
		t2 := takeToken(t, lock)
		flushAll(t, rdb)
		t3 := takeToken(t, lock)
		if t1 <= 0 || t2 <= t1 || t3 <= t2 {
			t.Fatalf("tokens %d, %d (counter evicted), %d (flushed): want strictly increasing", t1, t2, t3)
		}
	}
}

// testIdleLockNoKeys: once a lock is released, none of its keys is kept
// beyond its lease: an idle lock name costs no memory.
func testIdleLockNoKeys(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	const lease = 2 * time.Second
	c := newClient(t, rdb, WithLease(lease))
	takeToken(t, c.Mutex("idle-keys").Lock)
	takeToken(t, c.RWMutex("idle-keys-rw").Lock)
	takeToken(t, c.RWMutex("idle-keys-rw").RLock)
	var keys []string
	var mu sync.Mutex
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		it := c.Scan(ctx, 0, "cacheguard:lock:{idle-keys*", 100).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else if err := scan(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		pttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if pttl == -1 || pttl > lease {
			t.Errorf("key %s kept for %v after its lock was released", k, pttl)
		}
	}
}

// TestFencingSurvivesRestart: a server restarted without persistence has
// lost the counter; the next holder still gets a larger token.
func TestFencingSurvivesRestart(t *testing.T) {
	s, _ := redistestSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	c := newClient(t, rdb)
	t1 := takeToken(t, c.Mutex("fence-restart").Lock)
	t2 := takeToken(t, c.Mutex("fence-restart").Lock)
	s.Kill()
	s.Restart()
	t3 := takeToken(t, c.Mutex("fence-restart").Lock)
	if t1 <= 0 || t2 <= t1 || t3 <= t2 {
		t.Fatalf("tokens %d, %d, %d (after a restart): want strictly increasing", t1, t2, t3)
	}
}

// TestRedlockFencing: Redlock holders get strictly increasing tokens while
// nodes die and come back empty, two at a time.
func TestRedlockFencing(t *testing.T) {
	nodes := redistest.Nodes(t, 5)
	r := newRedlock(t, nodes, WithNodeTimeout(time.Second))
	m := r.Mutex("red-fence")
	last := takeToken(t, m.Lock)
	if last <= 0 {
		t.Fatalf("token %d", last)
	}
	for round, down := range [][]int{{0, 1}, {2, 3}, {4, 0}, {1, 2}} {
		for _, i := range down {
			nodes[i].Kill()
		}
		tok := takeToken(t, m.Lock)
		if tok <= last {
			t.Fatalf("round %d: token %d after %d", round, tok, last)
		}
		last = tok
		for _, i := range down {
			nodes[i].Restart()
		}
		tok = takeToken(t, m.Lock)
		if tok <= last {
			t.Fatalf("round %d: token %d after %d (nodes back empty)", round, tok, last)
		}
		last = tok
	}
}

// testSetFenced: a Redis-held resource accepts only growing tokens.
func testSetFenced(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	key := "res:{set-fenced}"
	rdb.Del(ctx, key)
	if err := SetFenced(ctx, rdb, key, 5, "five", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []int64{5, 3} {
		if err := SetFenced(ctx, rdb, key, tok, "stale", 0); !errors.Is(err, ErrFenced) {
			t.Fatalf("token %d after 5: %v, want ErrFenced", tok, err)
		}
	}
	if err := SetFenced(ctx, rdb, key, 6, "six", 0); err != nil {
		t.Fatal(err)
	}
	if v := rdb.HGet(ctx, key, "value").Val(); v != "six" {
		t.Fatalf("value %q", v)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("ttl %v", ttl)
	}
}
