package cache

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// After a failover the demoted master's read queue is dropped: the queues
// left are those of the current masters, one each.
func TestReadQueuesOfDemotedMasterDropped(t *testing.T) {
	rc, rdb := redistest.StartClusterWithReplicas(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	cc := rdb.(*redis.ClusterClient)
	onFirst := "" // a key of the shard that fails over
	for i := 0; i < 100; i++ {
		k := fmt.Sprint("k", i)
		if _, err := c.Get(ctx, k, noLoad); err != nil {
			t.Fatal(err)
		}
		if m, err := cc.MasterForKey(ctx, prefixFor(t)+k); err == nil && m.Options().Addr == rc.Masters[0].Addr {
			onFirst = k
		}
	}
	if onFirst == "" {
		t.Fatal("no key on master 0")
	}
	if got := queuedNodes(c); len(got) != 3 {
		t.Fatalf("read queues of %v before the failover; want the 3 masters", got)
	}
	rc.Failover(0)
	rc.WaitViewsAgree(0) // else a slot map reloaded from a lagging node names the demoted master again
	promoted := rc.Replicas[0].Addr
	waitFor(t, func() bool {
		if _, err := c.Get(ctx, onFirst, noLoad); err != nil {
			t.Fatal(err)
		}
		return slices.Contains(queuedNodes(c), promoted)
	})
	want := []string{promoted, rc.Masters[1].Addr, rc.Masters[2].Addr}
	slices.Sort(want)
	if got := queuedNodes(c); !slices.Equal(got, want) {
		t.Errorf("read queues of %v after the failover; want the masters %v (the demoted %s dropped)", got, want, rc.Masters[0].Addr)
	}
}

// queuedNodes lists the addresses of the nodes c has a read queue for.
func queuedNodes[V any](c *Cache[V]) []string { return c.redis.Nodes() }
