package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/faultproxy"
	"github.com/cacheguard/cacheguard/internal/members"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Three instances share a budget of b + r·t = 50 + 50/s × 3 s = 200 loads
// of one key; one of them is cut off from Redis (a blackhole between it and
// the server) while all three ask as fast as they can for 3 s. The fleet
// admits at most the budget plus the stated slack, r·D/n with D the time
// the others take to count the cut-off one out (members.TTL + a beat):
// the cut-off instance spends its share (r/n, from nothing), and the others
// shrink the shared budget to theirs. Before, the cut-off instance's share
// came on top of the whole shared budget: 265 (+32 %).
func TestFleetLimitHoldsWhenOneInstanceIsCutOff(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	lim := Limit{Rate: 50, Per: time.Second, Burst: 50}
	const n, run = 3, 3 * time.Second
	proxy, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	var ls []*Limiter
	for i := range n {
		addr := srv.Addr
		if i == 0 {
			addr = proxy.Addr()
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond, ContextTimeoutEnabled: true})
		t.Cleanup(func() { rdb.Close() })
		l, err := New(rdb, WithLoads(lim), WithInstances(n), WithPrefix(redistest.Prefix(t)), WithTimeout(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	// All three have beaten before the cut, as a running fleet has.
	for _, l := range ls {
		if _, err := l.Allow(t.Context(), cache.LimitRead, "warm"); err != nil {
			t.Fatal(err)
		}
	}
	budget := float64(lim.Burst) + float64(lim.Rate)*run.Seconds()
	// Healthy, the fleet admits its budget: the members count all three.
	healthy := askFor(ls, "healthy", run)
	t.Logf("healthy: admitted %d of a budget of %.0f", healthy[0]+healthy[1]+healthy[2], budget)
	if h := float64(healthy[0] + healthy[1] + healthy[2]); h < 0.9*budget || h > budget+2 {
		t.Fatalf("healthy fleet admitted %.0f, want about its budget %.0f", h, budget)
	}
	proxy.Blackhole(faultproxy.Both)
	admitted := askFor(ls, "hot", run)
	total := admitted[0] + admitted[1] + admitted[2]
	slack := float64(lim.Rate) * (members.TTL + members.Beat).Seconds() / n
	t.Logf("one cut off: admitted %d (cut off: %d, the others: %d, %d); budget %.0f, slack %.0f",
		total, admitted[0], admitted[1], admitted[2], budget, slack)
	if float64(total) > budget+slack+2 { // 2: the GCRA's own rounding
		t.Fatalf("the fleet admitted %d with one instance cut off, over the budget %.0f + slack %.0f", total, budget, slack)
	}
	if admitted[0] == 0 {
		t.Fatal("the cut-off instance admitted nothing: its share is lost")
	}
}

// askFor has every limiter ask for a load of key every millisecond for d
// and returns how many each admitted.
func askFor(ls []*Limiter, key string, d time.Duration) []int64 {
	admitted := make([]atomic.Int64, len(ls))
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				if ok, _ := l.Allow(context.Background(), cache.LimitLoad, key); ok {
					admitted[i].Add(1)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	out := make([]int64, len(ls))
	for i := range admitted {
		out[i] = admitted[i].Load()
	}
	return out
}
