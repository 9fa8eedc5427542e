package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A replica that stops applying the master's stream (CLIENT PAUSE WRITE on
// it) holds a value a Delete has replaced on the master: the Delete cannot
// return nil, and fails with ErrReplicaLag after the bound. A read through a
// client that reads replicas (ReadOnly here) then finds the old value, as
// documented; admitted to the local tier, it would be served for the tier's
// whole TTL, long after the replica caught up. Values read from Redis
// through such a client are not admitted; values this instance loaded (and
// wrote through the master) still are.
func TestReplicaReadsNotAdmitted(t *testing.T) {
	rc, _ := redistest.StartClusterWithReplicas(t)
	ctx := context.Background()
	reader := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), ReadOnly: true})
	t.Cleanup(func() { reader.Close() })
	writer := rc.Client()
	applied := make(chan struct{}, 16)
	const lag = 300 * time.Millisecond
	rcache := localCache(t, reader, testHealth, WithLocalTTL(5*time.Second), WithReplicaReads(lag),
		withHooks(&hooks{OnInvalidate: func([]string) { applied <- struct{}{} }}))
	wcache := newCache[string](t, writer, WithReplicaReads(lag))
	const key = "k"
	rkey := prefixFor(t) + key
	if err := wcache.Set(ctx, key, "v1"); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, applied, "Set's invalidation applied")
	master, err := writer.MasterForKey(ctx, rkey)
	if err != nil {
		t.Fatal(err)
	}
	if err := master.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	var replica *redis.Client // the node the reader reads the key from
	for deadline := time.Now().Add(20 * time.Second); ; {
		reader.ReloadState(ctx)
		replica, err = reader.SlaveForKey(ctx, rkey)
		if err == nil && replica.Options().Addr != master.Options().Addr {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader never routed the key to a replica")
		}
		time.Sleep(20 * time.Millisecond)
	}
	direct := redis.NewClient(&redis.Options{Addr: replica.Options().Addr})
	defer direct.Close()
	onReplica := func() bool {
		conn := direct.Conn()
		defer conn.Close()
		conn.Do(ctx, "READONLY")
		_, err := conn.Get(ctx, rkey).Result()
		return !errors.Is(err, redis.Nil)
	}
	// The replica stops applying the master's stream while the key is
	// deleted.
	if err := direct.Do(ctx, "CLIENT", "PAUSE", 20000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := wcache.Delete(ctx, key); !errors.Is(err, ErrReplicaLag) || !errors.Is(err, ErrRedis) {
		t.Fatalf("Delete with a replica paused: %v, want ErrReplicaLag and ErrRedis", err)
	} else if took := time.Since(start); took < lag || took > lag+time.Second {
		t.Fatalf("Delete failed after %v, want the bound %v", took, lag)
	}
	waitSignal(t, applied, "Delete's invalidation applied")
	if !onReplica() {
		t.Fatal("the paused replica does not hold the deleted value")
	}
	load := func(context.Context, string) (string, error) { return "v2", nil }
	if v, err := rcache.Get(ctx, key, load); err != nil || v != "v1" {
		t.Fatalf("Get from the lagging replica: %q, %v; want the replica's v1", v, err)
	}
	if err := direct.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); onReplica(); {
		if time.Now().After(deadline) {
			t.Fatal("the replica never caught up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The replica has the Delete: the next read must not come from the
	// local tier.
	if v, err := rcache.Get(ctx, key, load); err != nil || v != "v2" {
		t.Fatalf("after the replica caught up: %q, %v (stats %+v)", v, err, rcache.Stats())
	}
	before := rcache.Stats().LocalHits
	if v, err := rcache.Get(ctx, key, load); err != nil || v != "v2" || rcache.Stats().LocalHits != before+1 {
		t.Fatalf("what this instance loaded is not served from the local tier: %q, %v", v, err)
	}
}
