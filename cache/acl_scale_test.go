package cache

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The user of docs/acl.md with the block for replica reads, on a cluster
// with replicas (where it is created on every node): three instances whose
// clients read masters and replicas at random, with hot-key copies. Nothing
// may be refused (ACLClient fails the test on any ACL LOG entry).
func TestACLReadsThatOutgrowOneNode(t *testing.T) {
	_, admin := redistest.StartClusterWithReplicas(t)
	vars := map[string]string{"prefix": prefixFor(t)}
	user := redistest.ACLClient(t, admin, vars, "connection", "cluster", "cache", "cache cluster", "cache replicas")
	var fleet []*Cache[string]
	for range 3 {
		o := pubsub.CopyClusterOptions(user.(*redis.ClusterClient).Options())
		o.RouteRandomly = true
		c := redis.NewClusterClient(&o)
		t.Cleanup(func() { c.Close() })
		fleet = append(fleet, newCache[string](t, c, WithReplicaReads(time.Second),
			WithHotKeys(allHot{}), WithHotKeyCopies(2, time.Minute)))
	}
	ctx := context.Background()
	rows := dbRowOf("v1")
	for range 20 {
		for _, c := range fleet {
			if v, err := c.Get(ctx, "k", rows.load); err != nil || v != "v1" {
				t.Fatalf("Get: %q, %v", v, err)
			}
		}
	}
	if copyReads(fleet) == 0 {
		t.Fatal("no read from a copy")
	}
	if err := fleet[0].Set(ctx, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	everyReadIs(t, fleet, "k", "v2", "Set")
	if err := fleet[1].Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	everyReadIs(t, fleet, "k", "loaded", "Delete") // everyReadIs's loader
}
