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

// replicaFleet is three instances of one cache, each on its own client
// that reads masters and replicas at random, with WithReplicaReads(lag).
func replicaFleet(t *testing.T, rc *redistest.ReplicatedCluster, lag time.Duration) []*Cache[string] {
	t.Helper()
	var fleet []*Cache[string]
	for range 3 {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), RouteRandomly: true})
		t.Cleanup(func() { c.Close() })
		fleet = append(fleet, newCache[string](t, c, WithReplicaReads(lag)))
	}
	return fleet
}

// everyReadIs reads key 30 times on each instance and fails unless each
// read returns want.
func everyReadIs(t *testing.T, fleet []*Cache[string], key, want string, after string) {
	t.Helper()
	load := func(context.Context, string) (string, error) { return "loaded", nil }
	for i, c := range fleet {
		for range 30 {
			if v, err := c.Get(context.Background(), key, load); err != nil || v != want {
				t.Fatalf("after %s, instance %d read %q, %v; want %q", after, i, v, err, want)
			}
		}
	}
}

// Writes through any of three instances, each followed at once by reads
// from all three, which go to masters and replicas at random, while a
// replica lags now and then (its stream paused for 150 ms): no read returns
// an older value than the write that returned before it.
func TestReplicaReadsFleet(t *testing.T) {
	rc, _ := redistest.StartClusterWithReplicas(t)
	fleet := replicaFleet(t, rc, time.Second)
	ctx := context.Background()
	for i := range 60 {
		key := fmt.Sprint("k", i%4)
		v := fmt.Sprint("v", i)
		if i%3 == 0 { // the replica of the key's master lags
			shard := masterOf(t, rc.Client(), rc.Masters, fleet[0].keys.Key(key))
			if err := rc.Replicas[shard].Client().Do(ctx, "CLIENT", "PAUSE", 150, "WRITE").Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := fleet[i%3].Set(ctx, key, v); err != nil {
			t.Fatal(err)
		}
		everyReadIs(t, fleet, key, v, "Set "+v)
		if i%5 == 0 {
			if err := fleet[(i+1)%3].Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			everyReadIs(t, fleet, key, "loaded", "Delete")
		}
	}
}

// setUntil sets key to v through c until a Set returns nil, for at most
// 30 s, and returns the errors of the Sets that failed.
func setUntil(t *testing.T, c *Cache[string], key, v string) (failed []error) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := c.Set(context.Background(), key, v)
		if err == nil {
			return failed
		}
		if !errors.Is(err, ErrRedis) {
			t.Fatalf("Set: %v, want nil or an ErrRedis", err)
		}
		failed = append(failed, err)
		if time.Now().After(deadline) {
			t.Fatalf("Set never succeeded: %v", err)
		}
	}
}

// The bound under faults of the replica of the key's master: frozen
// (SIGSTOP), restarted empty, promoted. A write fails with ErrReplicaLag, at
// the bound, while a replica cannot have it; once one returns nil, every
// read on every instance returns its value.
func TestReplicaReadsUnderFaults(t *testing.T) {
	rc, _ := redistest.StartClusterWithReplicas(t)
	const lag = 500 * time.Millisecond
	fleet := replicaFleet(t, rc, lag)
	ctx := context.Background()
	const key = "k"
	shard := masterOf(t, rc.Client(), rc.Masters, fleet[0].keys.Key(key))
	setUntil(t, fleet[0], key, "v0")
	everyReadIs(t, fleet, key, "v0", "the first Set")

	t.Run("frozen", func(t *testing.T) {
		rc.Replicas[shard].Freeze() // SIGSTOP, as DEBUG SLEEP or a long pause would
		start := time.Now()
		err := fleet[1].Set(ctx, key, "v1")
		took := time.Since(start)
		rc.Replicas[shard].Thaw()
		if !errors.Is(err, ErrReplicaLag) || !errors.Is(err, ErrRedis) {
			t.Fatalf("Set with the replica frozen: %v, want ErrReplicaLag and ErrRedis", err)
		}
		if took > lag+time.Second {
			t.Fatalf("Set failed after %v, past the bound %v", took, lag)
		}
		if s := fleet[1].Stats(); s.ReplicaLags == 0 || s.ReplicaWaits < s.ReplicaLags {
			t.Fatalf("stats: %d waits, %d lags; want the failed wait counted", s.ReplicaWaits, s.ReplicaLags)
		}
		setUntil(t, fleet[1], key, "v1")
		everyReadIs(t, fleet, key, "v1", "the replica woke")
	})
	t.Run("restarted empty", func(t *testing.T) {
		rc.Replicas[shard].Kill()
		setUntil(t, fleet[2], key, "v2")
		rc.Replicas[shard].Restart()
		failed := setUntil(t, fleet[2], key, "v3")
		t.Logf("%d Sets failed while the replica synced", len(failed))
		everyReadIs(t, fleet, key, "v3", "the replica restarted")
	})
	t.Run("failover", func(t *testing.T) {
		rc.Failover(shard)
		setUntil(t, fleet[0], key, "v4")
		everyReadIs(t, fleet, key, "v4", "the failover")
	})
}

// What WithReplicaReads cannot bound is refused at New, and a client that
// reads replicas without it is too.
func TestReplicaReadsRefused(t *testing.T) {
	_, single := newSingle(t)
	rc, _ := redistest.StartCluster(t) // New sends nothing: no replica needed
	replicas := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), RouteByLatency: true})
	t.Cleanup(func() { replicas.Close() })
	short := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), ReadOnly: true, ReadTimeout: time.Second})
	t.Cleanup(func() { short.Close() })
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		opts []Option
	}{
		{"replica reads without a bound", replicas, nil},
		{"one node", single, []Option{WithReplicaReads(time.Second)}},
		{"no bound", replicas, []Option{WithReplicaReads(0)}},
		{"bound past the read timeout", short, []Option{WithReplicaReads(time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) { refusedAtNew(t, tc.rdb, tc.opts...) })
	}
	// A writer reading masters only may take it: its writes wait for the
	// replicas the others read.
	c, err := New[string](rc.Client(), Values[string]{}, WithPrefix("p:"), WithReplicaReads(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// With hot-key copies too, a write waits for the replicas of the copies'
// masters, where the deletes of the copies go: with those replicas paused
// it cannot return nil (reads there would find the old copy).
func TestReplicaReadsWaitForCopies(t *testing.T) {
	rc, _ := redistest.StartClusterWithReplicas(t)
	var fleet []*Cache[string]
	for range 3 {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), RouteRandomly: true})
		t.Cleanup(func() { c.Close() })
		fleet = append(fleet, newCache[string](t, c, WithReplicaReads(300*time.Millisecond),
			WithHotKeys(allHot{}), WithHotKeyCopies(2, time.Minute)))
	}
	ctx := context.Background()
	cc := rc.Client()
	copies := seedCopies(t, fleet, cc, "k", dbRowOf("old").load)
	for _, k := range copies {
		replica := rc.Replicas[masterOf(t, cc, rc.Masters, k)].Client()
		if err := replica.Do(ctx, "CLIENT", "PAUSE", 1500, "WRITE").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := fleet[0].Set(ctx, "k", "new"); !errors.Is(err, ErrReplicaLag) {
		t.Fatalf("Set with the copies' replicas paused: %v, want ErrReplicaLag", err)
	}
	setUntil(t, fleet[0], "k", "new")
	everyReadIs(t, fleet, "k", "new", "the replicas caught up")
}
