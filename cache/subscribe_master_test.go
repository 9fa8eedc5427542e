package cache

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// subscribers returns how many clients of node are subscribed to ch, as a
// channel or a shard channel.
func subscribers(t *testing.T, node *redistest.Server, ch string) int64 {
	t.Helper()
	c := redistest.ClientLike(node.Options())
	defer c.Close()
	ctx := context.Background()
	n, err := c.PubSubShardNumSub(ctx, ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.PubSubNumSub(ctx, ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[ch] + m[ch]
}

// channelNodes starts a cluster with replicas and returns it with the
// invalidation channel of the calling test, the index of its owner, that
// master and its replica.
func channelNodes(t *testing.T) (rc *redistest.ReplicatedCluster, channel string, owner int, master, replica *redistest.Server) {
	t.Helper()
	rc, _ = redistest.StartClusterWithReplicas(t)
	channel = "cacheguard:invalidate:" + prefixFor(t)
	slot, err := rc.Client().ClusterKeySlot(context.Background(), channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	owner, _ = slotOwner(t, rc.Masters, slot)
	return rc, channel, owner, rc.Masters[owner], rc.Replicas[owner]
}

// awaitSubscribed waits until c's local tier is up.
func awaitSubscribed[V any](t *testing.T, c *Cache[V]) {
	t.Helper()
	select {
	case <-c.bus.Subscribed():
	case <-time.After(20 * time.Second):
		t.Fatal("the local tier never came up")
	}
}

// On a cluster the invalidation subscriber trusts only a subscription on
// the channel's master (invalidate_subscribe.go). Here the client's slot
// map names the replica as the channel's master, as a map read before a
// failover names the demoted node, until the subscriber has found out that
// it is not; the tier must come up on the master only.
func TestSubscriberTrustsOnlyTheChannelMaster(t *testing.T) {
	rc, channel, _, master, replica := channelNodes(t)
	ctx := context.Background()
	truth, err := rc.Masters[0].Client().ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	slot, err := rc.Client().ClusterKeySlot(ctx, channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	var stale atomic.Bool
	stale.Store(true)
	slotMap := func(context.Context) ([]redis.ClusterSlot, error) {
		if !stale.Load() {
			return truth, nil
		}
		m := make([]redis.ClusterSlot, len(truth))
		for i, s := range truth {
			m[i] = s
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				m[i].Nodes = []redis.ClusterNode{{Addr: replica.Addr}, {Addr: master.Addr}}
			}
		}
		return m, nil
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{ClusterSlots: slotMap})
	t.Cleanup(func() { rdb.Close() })
	var refused atomic.Int64
	c := newCache[string](t, rdb, WithLocal(1<<20), WithLocalAdmitAll(), testHealth,
		withHooks(&hooks{OnNotMaster: func() { refused.Add(1); stale.Store(false) }}))
	awaitSubscribed(t, c)
	if n := subscribers(t, replica, channel); n != 0 {
		t.Errorf("the tier came up with %d subscription(s) on the replica %s", n, replica.Addr)
	}
	if n := subscribers(t, master, channel); n != 1 {
		t.Errorf("%d subscriptions on the channel's master %s, want 1", n, master.Addr)
	}
	if refused.Load() == 0 {
		t.Error("the subscription on the replica was never refused")
	}
}

// After a manual failover the subscriber moves to the promoted master,
// whatever its client's slot map said when the old master stepped down
// (the demoted node accepts the SSUBSCRIBE, and goes on answering PINGs).
func TestSubscriberFollowsAFailover(t *testing.T) {
	rc, channel, owner, master, replica := channelNodes(t)
	c := newCache[string](t, rc.Client(), WithLocal(1<<20), WithLocalAdmitAll(), testHealth)
	awaitSubscribed(t, c)
	if n := subscribers(t, master, channel); n != 1 {
		t.Fatalf("%d subscriptions on the channel's master %s, want 1", n, master.Addr)
	}
	rc.Failover(owner)
	rc.WaitDemotedListed(owner)
	deadline := time.Now().Add(10 * time.Second)
	for subscribers(t, replica, channel) != 1 || subscribers(t, master, channel) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the failover: %d subscriptions on the promoted master, %d on the demoted one",
				subscribers(t, replica, channel), subscribers(t, master, channel))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server that refuses ROLE (here the user's ACL denies it) cannot be
// checked: the subscriber says so and goes on without the check, rather
// than keeping the local tier off for good.
func TestSubscriberWithoutRole(t *testing.T) {
	cl, rdb := redistest.StartCluster(t)
	ctx := context.Background()
	for _, m := range cl.Masters {
		if err := m.Client().Do(ctx, "ACL", "SETUSER", "default", "-role").Err(); err != nil {
			t.Fatal(err)
		}
	}
	reported := make(chan error, 16)
	c := newCache[string](t, rdb, WithLocal(1<<20), WithLocalAdmitAll(), testHealth,
		WithErrorHandler(func(err error) {
			select {
			case reported <- err:
			default:
			}
		}))
	awaitSubscribed(t, c)
	select {
	case err := <-reported:
		if !strings.Contains(err.Error(), "cannot check") || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("reported %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the refused ROLE was not reported")
	}
}

// The ROLE check does not hold Close, nor outlive it, when the node stops
// answering: go-redis reads a reply within the client's read timeout
// whatever the context says, so a ROLE sent through the user's client to a
// frozen node held Close for 5 s (its time limit) and left the subscriber
// running after it.
func TestCloseWhileRoleHangs(t *testing.T) {
	for _, readTimeout := range []time.Duration{0, 10 * time.Second} {
		t.Run("read timeout "+readTimeout.String(), func(t *testing.T) {
			cl, _ := redistest.StartCluster(t)
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ReadTimeout: readTimeout})
			t.Cleanup(func() { rdb.Close() })
			channel := "cacheguard:invalidate:" + prefixFor(t)
			slot, err := rdb.ClusterKeySlot(context.Background(), channel).Result()
			if err != nil {
				t.Fatal(err)
			}
			owner, _ := slotOwner(t, cl.Masters, slot)
			asking := make(chan struct{}, 1)
			c, err := New(rdb, Values[string]{}, WithPrefix(prefixFor(t)), WithLocal(1<<20), WithLocalAdmitAll(), testHealth,
				withHooks(&hooks{BeforeRole: func() {
					select {
					case asking <- struct{}{}:
					default:
					}
				}}))
			if err != nil {
				t.Fatal(err)
			}
			awaitSubscribed(t, c)
			<-asking // the confirmation's check
			cl.Masters[owner].Freeze()
			t.Cleanup(cl.Masters[owner].Thaw)
			waitSignal(t, asking, "asked ROLE of the frozen node")
			start := time.Now()
			err = c.Close()
			if took := time.Since(start); took > 500*time.Millisecond || err != nil {
				t.Fatalf("Close took %v (%v) with the ROLE check waiting on a frozen node", took, err)
			}
		})
	}
}
