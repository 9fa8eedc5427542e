package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A clear of the local tier (a lost invalidation message, or the
// subscription coming back after it was down) means any entry in it may be
// stale. An entry an admission stored just after the Clear, of the epoch
// before it, is not served as fresh (its epoch is old); it must not be
// served later either, when Redis fails and the tier answers with stale
// entries.
func TestEntryFromBeforeAClearNotServedInAnOutage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clear func(t *testing.T, srv *redistest.Server, c *Cache[string], key string, applied, subscribed chan struct{})
	}{
		{"lost message", func(t *testing.T, srv *redistest.Server, c *Cache[string], key string, applied, _ chan struct{}) {
			// A publisher's messages 1 and 3: 2 was lost. Their key is on
			// another stripe than the held admission's.
			other := "other"
			for i := 0; c.tier.SameStripe(other, key); i++ {
				other = "other" + string(rune('a'+i))
			}
			for _, seq := range []uint64{1, 3} {
				msg := wire.EncodeInvalidation(wire.Invalidation{Source: [wire.SourceIDSize]byte{9}, Sent: time.Now().UnixNano(), Seq: seq, Keys: []string{other}})
				if err := srv.Client().Publish(context.Background(), c.bus.Channel(), msg).Err(); err != nil {
					t.Fatal(err)
				}
				waitSignal(t, applied, "message applied")
			}
		}},
		{"resubscription", func(t *testing.T, srv *redistest.Server, c *Cache[string], _ string, _, subscribed chan struct{}) {
			if err := srv.Client().ClientKillByFilter(context.Background(), "TYPE", "pubsub").Err(); err != nil {
				t.Fatal(err)
			}
			waitSignal(t, subscribed, "subscribed again")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := redistest.RealSingle(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
			defer rdb.Close()
			ctx := context.Background()
			applied, subscribed := make(chan struct{}, 4), make(chan struct{}, 4)
			var c *Cache[string]
			held := false
			c = localCache(t, rdb, WithLocalStale(time.Minute), withHooks(&hooks{
				// The clear falls between the admission's check and its Set.
				BeforeLocalSet: func(key string) {
					if key == "hot" && !held {
						held = true
						tc.clear(t, srv, c, key, applied, subscribed)
					}
				},
				OnInvalidate: func([]string) { applied <- struct{}{} },
				OnSubscribed: func() { subscribed <- struct{}{} },
			}))
			<-subscribed // the first subscription
			if v, err := c.Get(ctx, "hot", func(context.Context, string) (string, error) { return "v", nil }); err != nil || v != "v" {
				t.Fatalf("Get: %q, %v", v, err)
			}
			e, ok := c.tier.Store().Get("hot")
			if !held || !ok || c.tier.EpochOf(e) >= c.tier.Epoch() {
				t.Fatalf("the held admission stored no entry of the epoch before the clear (held %v, stored %v)", held, ok)
			}
			if fresh, _ := c.tier.Get("hot"); fresh {
				t.Fatal("the entry from before the clear is served as fresh")
			}
			srv.Kill()
			if v, err := c.Get(ctx, "hot", never(t)); !errors.Is(err, ErrRedis) {
				t.Fatalf("during the outage: %q, %v; want ErrRedis, not the entry from before the clear", v, err)
			}
			if st := c.Stats(); st.StaleServed != 0 {
				t.Fatalf("stale served %d", st.StaleServed)
			}
		})
	}
}

func waitSignal(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("never %s", what)
	}
}
