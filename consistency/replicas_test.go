package consistency

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// With WaitReplicas, Invalidate returns only once the replica has the
// delete; with the replica frozen it fails with ErrReplicaLag and queues a
// retry, which succeeds once the replica is back.
func TestWaitReplicasOnPrimaryAndReplica(t *testing.T) {
	ctx := context.Background()
	primary, replica := redistest.Replicated(t)
	rdb := primary.Client()
	rep := replica.Client()
	clk := newFakeClock()
	q := newQueue(t, rdb, withClock(clk), WithoutWorker(), WithTimeout(time.Second))
	c := newCache[string](t, rdb)
	users := register(t, q, "users", c, WaitReplicas(1, 2*time.Second))
	rkey := prefixFor(t) + "c:k"
	for round := range 20 {
		if err := c.Set(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
		if err := users.Invalidate(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		// No wait here: WAIT returned, so the replica has applied it.
		if n := rep.Exists(ctx, rkey).Val(); n != 0 {
			t.Fatalf("round %d: the replica still has the key after Invalidate returned", round)
		}
	}

	if err := c.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	slow := register(t, q, "slow", c, WaitReplicas(1, 100*time.Millisecond))
	replica.Freeze()
	err := slow.Invalidate(ctx, "k")
	replica.Thaw()
	if !errors.Is(err, ErrReplicaLag) || !errors.Is(err, ErrQueued) {
		t.Fatalf("Invalidate with a frozen replica = %v, want ErrReplicaLag and ErrQueued", err)
	}
	clk.Advance(time.Minute)
	if n, _, err := q.drain(ctx); err != nil || n != 1 {
		t.Fatalf("retry drained %d, %v", n, err)
	}
	if st := q.Stats(); st.Done != 1 {
		t.Fatalf("stats %+v: the retry should be confirmed now", st)
	}

	cq := newQueue(t, redistest.SharedCluster(t), WithoutWorker())
	if _, err := cq.Register("x", c, WaitReplicas(1, time.Second)); err == nil {
		t.Fatal("WaitReplicas accepted a cluster client")
	}
}
