package consistency

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// With the queue spread over 8 shards on a 3-master cluster, its keys sit on
// more than one node, and two instances draining it still run every delete
// exactly once with no claim lost; dead letters of every shard are counted.
func TestShardedQueueOnCluster(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedCluster(t)
	const n = 300
	producer := newQueue(t, rdb, WithoutWorker(), WithShards(8))
	pt := register(t, producer, "users", newCache[string](t, rdb))
	for i := range n {
		if err := pt.InvalidateAfter(ctx, 0, "k"+itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	nodes := map[string]bool{}
	cc := rdb.(*redis.ClusterClient)
	for _, l := range producer.shards {
		if cc.Exists(ctx, l.Data).Val() != 1 {
			continue
		}
		slot := cc.ClusterKeySlot(ctx, l.Data).Val()
		for _, s := range cc.ClusterSlots(ctx).Val() {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				nodes[s.Nodes[0].Addr] = true
			}
		}
	}
	if len(nodes) < 2 {
		t.Fatalf("queue entries on %d node(s), want them spread", len(nodes))
	}
	inv := newCounting(newCache[string](t, rdb))
	var ws [2]*drainWatch
	var qs [2]*Queue
	for i := range qs {
		ws[i] = newDrainWatch()
		qs[i] = newQueue(t, rdb, WithShards(8), WithBatchSize(7), withHooks(hooks{afterDrain: ws[i].hook}))
	}
	for i := range qs {
		register(t, qs[i], "users", inv)
	}
	limit := time.NewTimer(20 * time.Second) // a failure guard
	defer limit.Stop()
	for qs[0].Stats().Done+qs[1].Stats().Done < n {
		select {
		case <-ws[0].ch:
		case <-ws[1].ch:
		case <-limit.C:
			t.Fatalf("done %d + %d of %d", qs[0].Stats().Done, qs[1].Stats().Done, n)
		}
	}
	for i := range n {
		if c := inv.deleted("k" + itoa(i)); c != 1 {
			t.Fatalf("key k%d deleted %d times, want once", i, c)
		}
	}
	if a, b := qs[0].Stats(), qs[1].Stats(); a.LostClaims+b.LostClaims != 0 {
		t.Fatalf("lost claims %d/%d", a.LostClaims, b.LostClaims)
	}
	if p, _ := producer.Pending(ctx); p != 0 {
		t.Fatalf("%d pending", p)
	}
	t.Logf("entries on %d nodes", len(nodes))

	// Poison entries in several shards: each dead-lettered alone, counted
	// across shards.
	dq := newQueue(t, rdb, WithoutWorker(), WithShards(8), WithMaxAttempts(1))
	c := newCache[string](t, rdb)
	dt := register(t, dq, "poisoned", poisonInvalidator{c, "poison"})
	for range 5 {
		if err := dt.InvalidateAfter(ctx, 0, "poison"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _, err := dq.drain(ctx); err != nil || got != 5 {
		t.Fatalf("drained %d, %v", got, err)
	}
	if cnt, err := dq.DeadLetterCount(ctx, "poisoned"); err != nil || cnt != 5 {
		t.Fatalf("dead letter count %d, %v; want 5", cnt, err)
	}
	if l, err := dq.DeadLetters(ctx, 3); err != nil || len(l) != 3 {
		t.Fatalf("dead letters %d, %v; want the newest 3", len(l), err)
	}
}
