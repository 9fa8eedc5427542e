package cache

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Caches of one prefix made and closed concurrently on one client (a
// rolling restart of handlers, per-request caches, tests), with another
// cache keeping the shared pub/sub connection open: every cache still open
// must have its invalidation subscription come up, or its local tier is
// never served. (Half the rounds here: up after 5 s, the pub/sub
// connection taking the reply to the closed cache's UNSUBSCRIBE for a server
// that ended the new one's subscription and waiting opTimeout before
// subscribing it again on the same node; once, never up at all.)
func TestCachesOfOnePrefixChurnOnOneClient(t *testing.T) {
	_, rdb := newSingle(t)
	keeper := localCache(t, rdb, WithPrefix(prefixFor(t)+"keeper:"))
	prefix := prefixFor(t)
	waitUp := func(c *Cache[string]) bool {
		select {
		case <-c.bus.Subscribed():
			return true
		case <-time.After(15 * time.Second):
			return false
		}
	}
	if !waitUp(keeper) {
		t.Fatal("keeper never subscribed")
	}
	for round := 0; round < 20; round++ {
		old := localCache(t, rdb, WithPrefix(prefix))
		waitUp(old)
		var wg sync.WaitGroup
		var fresh *Cache[string]
		wg.Add(2)
		go func() { defer wg.Done(); old.Close() }()
		go func() {
			defer wg.Done()
			fresh = newCache[string](t, rdb, WithLocal(1<<20), WithLocalAdmitAll(), WithPrefix(prefix))
		}()
		wg.Wait()
		start := time.Now()
		up := waitUp(fresh)
		if el := time.Since(start); up && el > time.Second {
			t.Fatalf("round %d: the invalidation subscription of a cache made as another of its prefix closed came up after %v (local tier off meanwhile)", round, el)
		}
		if !up {
			n, _ := rdb.PubSubNumSub(context.Background(), fresh.bus.Channel()).Result()
			t.Fatalf("round %d: a cache made as another of its prefix closed never had its invalidation subscription come up (PUBSUB NUMSUB %v)", round, n)
		}
		fresh.Close()
	}
}
