package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestSingleSetGet(t *testing.T) {
	_, c := Single(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("got %q, %v", v, err)
	}
}

func TestClusterSpreadsSlots(t *testing.T) {
	cl, c := StartCluster(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Keys land on more than one master.
	used := 0
	for _, m := range cl.Masters {
		n, err := m.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("keys landed on %d masters, want at least 2", used)
	}
}

func TestKillRestart(t *testing.T) {
	s, c := RealSingle(t)
	ctx := context.Background()
	c.Set(ctx, "k", "v", 0)
	s.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping succeeded on a killed server")
	}
	s.Restart()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
	if n, _ := c.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("restarted server kept data; it should start empty")
	}
}

func TestNodesAreIndependent(t *testing.T) {
	ns := Nodes(t, 3)
	ctx := context.Background()
	ns[0].Client().Set(ctx, "k", "v", 0)
	if n, _ := ns[1].Client().Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("nodes share data")
	}
}

func TestReplicatedClusterFailover(t *testing.T) {
	start := time.Now()
	rc, c := StartClusterWithReplicas(t)
	t.Logf("formed in %v", time.Since(start))
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Replication is asynchronous: wait until every replica has the writes,
	// or a master killed at once could take some with it.
	for i, m := range rc.Masters {
		if n, err := m.Client().Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n < 1 {
			t.Fatalf("master %d: WAIT = %d, %v", i, n, err)
		}
	}
	start = time.Now()
	rc.Failover(1)
	t.Logf("manual failover in %v", time.Since(start))
	start = time.Now()
	rc.KillMaster(0)
	t.Logf("failover after a kill in %v", time.Since(start))
	// The promoted replicas serve the data written before.
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		var v string
		var err error
		for i := 0; i < 50; i++ {
			if v, err = c.Get(ctx, k).Result(); err == nil {
				break
			}
			c.(*redis.ClusterClient).ReloadState(ctx) // go-redis reloads its slot map lazily
			time.Sleep(100 * time.Millisecond)
		}
		if v != k {
			t.Fatalf("%s after failover: %q, %v", k, v, err)
		}
	}
}

// TestFallbackTTLsRunDown pins that a key set with a TTL goes away by itself
// on whatever server Single gave, miniredis included: code waiting for a
// lease or a lock to lapse must not wait forever. (Polling with a deadline
// waits for the server, not for the code under test.)
func TestFallbackTTLsRunDown(t *testing.T) {
	_, c := Single(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Exists(ctx, "k").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 50ms TTL still exists after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSentinelFailoverAndKill(t *testing.T) {
	s, rdb := StartSentinel(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	first := s.CurrentMaster()
	promoted := s.Failover()
	if promoted == first {
		t.Fatal("the failover kept the master")
	}
	if err := rdb.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Fatalf("write after the failover: %v", err)
	}
	s.WaitDemoted(first)
	s.WaitReady()
	again := s.KillMaster()
	if again != first {
		t.Fatalf("after killing %s the sentinels named %s", promoted.Addr, again.Addr)
	}
	if err := rdb.Set(ctx, "k", "x", 0).Err(); err != nil {
		t.Fatalf("write after the kill: %v", err)
	}
}

// With AOF on every node, a killed master restarts with its data, rejoins
// as the replica of the node promoted in its place, and can take its shard
// back by the next failover: a write acknowledged before either kill
// survives both.
func TestPersistentClusterRejoin(t *testing.T) {
	rc, c := StartClusterWithReplicas(t, "appendonly", "yes", "appendfsync", "always")
	ctx := context.Background()
	cc := c.(*redis.ClusterClient)
	set := func(k string) {
		t.Helper()
		for i := 0; ; i++ {
			err := c.Set(ctx, k, k, 0).Err()
			if err == nil {
				return
			}
			if i > 50 {
				t.Fatalf("set %s: %v", k, err)
			}
			cc.ReloadState(ctx) // go-redis reloads its slot map lazily
			time.Sleep(100 * time.Millisecond)
		}
	}
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		set(k)
	}
	for i, m := range rc.Masters {
		if n, err := m.Client().Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n < 1 {
			t.Fatalf("master %d: WAIT = %d, %v", i, n, err)
		}
	}
	for round := 0; round < 2; round++ {
		rc.KillMasterInSync(0)
		rc.RejoinAsReplica(0)
	}
	for _, k := range keys {
		var v string
		var err error
		for i := 0; i < 50; i++ {
			if v, err = c.Get(ctx, k).Result(); err == nil {
				break
			}
			cc.ReloadState(ctx)
			time.Sleep(100 * time.Millisecond)
		}
		if v != k {
			t.Fatalf("%s after two failovers: %q, %v", k, v, err)
		}
	}
}
