package cache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
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
			settle(b)
			if _, ok := b.local.Get("k"); !ok {
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
