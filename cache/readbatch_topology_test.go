package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A manual failover (CLUSTER FAILOVER on the replica) of the master whose
// reads are queued: the pipeline goes to the demoted node, is answered
// MOVED and follows the slot; every caller gets its value, and reads go on
// through the promoted master's queue, nothing left waiting in the old one.
func TestQueuedReadsFollowAFailover(t *testing.T) {
	rc, rdb := redistest.StartClusterWithReplicas(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	keys := batchKeys(transport.ReadsInFlight + 20)
	rkey := prefixFor(t) + keys[0]
	h, held := holdTwoReads(t, rdb, c, keys)
	old := c.redis.NodeOf(ctx, rkey)
	queued := getEach(c, ctx, keys[transport.ReadsInFlight:])
	waitQueued(t, c, rkey, 20)
	slot, err := rdb.(*redis.ClusterClient).ClusterKeySlot(ctx, rkey).Result()
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := slotOwner(t, rc.Masters, slot)
	rc.Failover(owner)
	close(h.release)
	defer drainHeld(t, h)()
	for i, ch := range slices.Concat(held, queued) {
		if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v across a failover", keys[i], a.v, a.err)
		}
	}
	for _, ch := range getEach(c, ctx, keys) {
		if a := recvOr(t, ch, "a Get after the failover"); a.err != nil || !strings.HasPrefix(a.v, "v-") {
			t.Errorf("Get after the failover = %q, %v", a.v, a.err)
		}
	}
	if busy, waiting := old.Load(); busy != 0 || waiting != 0 {
		t.Errorf("the demoted master's queue: %d commands under way, %d waiting", busy, waiting)
	}
	checkFlightsIdle(t, c)
}

// On a Ring, each shard has its own queue; a shard is killed with its
// pipeline of queued reads about to go out: its callers fail with ErrRedis,
// each on its own, and the other shard's reads go on.
func TestQueuedRingReadsFailOnlyOnTheDeadShard(t *testing.T) {
	redistest.NeedServer(t)
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:              map[string]string{"a": a.Addr, "b": b.Addr},
		HeartbeatFrequency: time.Hour, // the dead shard stays in the ring
		MaxRetries:         -1,
		DialTimeout:        100 * time.Millisecond,
	})
	t.Cleanup(func() { ring.Close() })
	ctx := context.Background()
	c := newCache[string](t, ring)
	var onA, onB []string
	for i := 0; len(onA) < transport.ReadsInFlight+10 || len(onB) < 10; i++ {
		k := fmt.Sprint("r", i)
		if err := c.Set(ctx, k, "v-"+k); err != nil {
			t.Fatal(err)
		}
		if a.Client().Exists(ctx, prefixFor(t)+k).Val() == 1 {
			onA = append(onA, k)
		} else {
			onB = append(onB, k)
		}
	}
	h, held := holdTwoReads(t, ring, c, onA)
	gate := newPipelineGate(t)
	ring.AddHook(gate)
	queued := getEach(c, ctx, onA[transport.ReadsInFlight:])
	waitQueued(t, c, prefixFor(t)+onA[0], len(onA)-transport.ReadsInFlight)
	close(h.release)
	defer drainHeld(t, h)()
	for i, ch := range held {
		if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+onA[i] {
			t.Errorf("Get(%s) = %q, %v", onA[i], a.v, a.err)
		}
	}
	recvOr(t, gate.sending, "the pipeline")
	a.Kill()
	close(gate.open)
	for i, ch := range queued {
		k := onA[transport.ReadsInFlight+i]
		if a := recvOr(t, ch, "a queued Get"); !errors.Is(a.err, ErrRedis) {
			t.Errorf("Get(%s) on the killed shard = %q, %v; want ErrRedis", k, a.v, a.err)
		}
	}
	for i, ch := range getEach(c, ctx, onB) {
		if a := recvOr(t, ch, "a Get on the live shard"); a.err != nil || a.v != "v-"+onB[i] {
			t.Errorf("Get(%s) on the live shard = %q, %v", onB[i], a.v, a.err)
		}
	}
	checkFlightsIdle(t, c)
}

// A Sentinel failover while reads are queued: every caller gets its value,
// and reads and writes go on through the promoted master.
func TestQueuedReadsAcrossASentinelFailover(t *testing.T) {
	s, rdb := redistest.StartSentinel(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	keys := batchKeys(transport.ReadsInFlight + 10)
	h, held := holdTwoReads(t, rdb, c, keys)
	queued := getEach(c, ctx, keys[transport.ReadsInFlight:])
	waitQueued(t, c, prefixFor(t)+keys[0], 10)
	promoted := s.Failover()
	close(h.release)
	defer drainHeld(t, h)()
	for i, ch := range slices.Concat(held, queued) {
		if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v across a failover", keys[i], a.v, a.err)
		}
	}
	awaitWritesOn(t, rdb, promoted)
	if err := c.Set(ctx, keys[0], "new"); err != nil {
		t.Fatal(err)
	}
	for _, ch := range getEach(c, ctx, keys[:1]) {
		if a := recvOr(t, ch, "a Get after the failover"); a.err != nil || a.v != "new" {
			t.Errorf("Get after a write on the promoted master = %q, %v", a.v, a.err)
		}
	}
	checkFlightsIdle(t, c)
}
