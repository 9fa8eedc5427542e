package cache

import (
	"context"
	"fmt"
	"testing"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// On a ring each shard has its own read queue: while one shard's reads are
// all under way (held), a Get of a key on the other shard goes out at once
// as a plain GET instead of waiting behind them.
func TestRingReadsQueuePerShard(t *testing.T) {
	nodes := redistest.Nodes(t, 2)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": nodes[0].Addr, "b": nodes[1].Addr}})
	t.Cleanup(func() { ring.Close() })
	c := newCache[string](t, ring)
	p := prefixFor(t)
	var shards []*redis.Client
	byShard := map[*redis.Client][]string{}
	for i := 0; len(shards) < 2 || len(byShard[shards[0]]) < transport.ReadsInFlight; i++ {
		k := fmt.Sprintf("{a%d}", i)
		sh := ringShard(t, ring, p+k)
		if byShard[sh] == nil {
			shards = append(shards, sh)
		}
		byShard[sh] = append(byShard[sh], k)
	}
	busy, other := byShard[shards[0]], byShard[shards[1]][0]
	if err := c.Set(context.Background(), other, "v-"+other); err != nil {
		t.Fatal(err)
	}
	h, held := holdTwoReads(t, ring, c, busy[:transport.ReadsInFlight])
	got := getEach(c, context.Background(), []string{other})
	recvOr(t, h.held, "the other shard's read to go out while the first shard's are held")
	close(h.release)
	for i, ch := range held {
		if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+busy[i] {
			t.Errorf("Get(%s) = %q, %v", busy[i], a.v, a.err)
		}
	}
	if a := recvOr(t, got[0], "the other shard's Get"); a.err != nil || a.v != "v-"+other {
		t.Errorf("Get(%s) = %q, %v", other, a.v, a.err)
	}
	checkFlightsIdle(t, c)
}

func ringShard(t *testing.T, ring *redis.Ring, rkey string) *redis.Client {
	t.Helper()
	sh, err := ring.GetShardClientForKey(rkey)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}
