package cache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Under Sentinel the invalidation subscriber follows the master: after a
// planned failover (SENTINEL FAILOVER) the demoted master goes on answering
// PINGs, and as a master, for seconds, so a subscriber left on it hears
// nothing of the writes made on the promoted one. B's local TTL is far above
// the health-check bound, so only the subscriber can keep B within it: no
// Get of B that starts later than the bound after A's Delete returned may
// return the deleted value. The same after the master is killed.
func TestSentinelLocalTierFollowsTheMaster(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*redistest.Sentinel) *redistest.Server
	}{
		{"planned failover", (*redistest.Sentinel).Failover},
		{"master killed", (*redistest.Sentinel).KillMaster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rdbA := redistest.StartSentinel(t)
			rdbB := s.Client()
			ctx := context.Background()
			var version atomic.Int64
			version.Store(1)
			load := func(context.Context, string) (string, error) {
				return "v" + string(rune('0'+version.Load())), nil
			}
			a := newCache[string](t, rdbA)
			b := localCache(t, rdbB, WithLocalTTL(30*time.Second), testHealth)
			if v, err := b.Get(ctx, "k", load); err != nil || v != "v1" {
				t.Fatalf("first read: %q %v", v, err)
			}
			if _, ok := b.tier.Store().Get("k"); !ok {
				t.Fatal("not cached locally")
			}
			promoted := tc.fault(s)
			// The write lands on the promoted master (A's client may need a
			// moment to follow the Sentinels, and retries).
			version.Store(2)
			direct := promoted.Client()
			var returned time.Time
			for deadline := time.Now().Add(20 * time.Second); ; {
				dctx, cancel := context.WithTimeout(ctx, time.Second)
				err := a.Delete(dctx, "k")
				cancel()
				returned = time.Now()
				if n, _ := direct.Exists(ctx, prefixFor(t)+"k").Result(); err == nil && n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the Delete never reached the promoted master: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			bound := testHealthBound() + staleSlack
			for end := returned.Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				start := time.Now()
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				v, err := b.Get(rctx, "k", load)
				cancel()
				if err == nil && v == "v1" && start.Sub(returned) > bound {
					t.Fatalf("B served the deleted value %v after the Delete returned (bound %v)", start.Sub(returned), testHealthBound())
				}
			}
		})
	}
}

// The fault suite's workload across a planned failover under Sentinel: the
// readers run throughout and the subscriber follows the promoted master, so
// the health check's bound holds from start to end. The writer pauses from
// just before the failover until its client writes to the promoted master:
// a write the demoted master acknowledged after the promotion is lost by
// Redis itself (asynchronous replication; the demoted node resyncs from the
// promoted one), which no cache can mask (without the pause, reads of the old
// row came up to 1.08 s after its Delete, from Redis, not the local tier).
func TestFaultSentinelFailover(t *testing.T) {
	s, reader := redistest.StartSentinel(t)
	writer := s.Client()
	r := newFaultRun(t, reader, writer, func() redis.UniversalClient { return s.Client() }, testHealthBound())
	r.start()
	r.phase(300 * time.Millisecond)
	r.writing.Lock()
	promoted := s.Failover()
	awaitWritesOn(t, writer, promoted)
	r.writing.Unlock()
	r.phase(time.Second)
	r.finish()
}

// awaitWritesOn waits until a write through rdb lands on node.
func awaitWritesOn(t *testing.T, rdb redis.UniversalClient, node *redistest.Server) {
	t.Helper()
	ctx := context.Background()
	direct := node.Client()
	key := prefixFor(t) + "probe"
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatalf("writes never reached %s", node.Addr)
		}
		rdb.Set(ctx, key, i, 0)
		if n, err := direct.Get(ctx, key).Int(); err == nil && n == i {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
