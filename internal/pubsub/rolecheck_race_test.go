package pubsub_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The ROLE check's client is made from a copy of the node client's options
// while that node client may be setting up a connection of its own, which
// changes its options (go-redis gives up the maintenance notifications on a
// server without them). Under -race, the copy must not read what that
// changes.
func TestRoleCheckWhileNodeClientDials(t *testing.T) {
	cl, _ := redistest.StartCluster(t)
	ctx := context.Background()
	for i := range 10 {
		cc := cl.Client() // fresh node clients
		h := pubsub.Acquire(cc)
		var subs []*pubsub.Sub
		var es []*events
		for j := range 6 { // on every master
			e := newEvents()
			es = append(es, e)
			subs = append(subs, h.Subscribe(ctx, fmt.Sprint("role-race-", i, "-", j), e, pubsub.Options{}))
		}
		// The masters' first ordinary connections, set up while the
		// subscriptions check their nodes' roles.
		var wg sync.WaitGroup
		wg.Go(func() {
			cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
		})
		for _, e := range es {
			await(t, e.up, "Up")
		}
		wg.Wait()
		for _, s := range subs {
			s.Close()
		}
		h.Release(time.Time{})
		cc.Close()
	}
}
