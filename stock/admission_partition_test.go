package stock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/faultproxy"
	"github.com/cacheguard/cacheguard/internal/members"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Three processes share a SKU budget of b + r·t = 50 + 50/s × 3 s = 200
// requests; one is cut off from Redis while all three ask as fast as they
// can for 3 s: the fleet admits at most the budget plus the stated slack,
// b/n + r·D/n (the cut-off process's share of the burst, and its share of
// the rate until the others count it out, D = members.TTL + a beat).
// Before, its whole local share came on top of the shared budget: 264.
func TestAdmissionHoldsWhenOneProcessIsCutOff(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	sku := Rate{Count: 50, Per: time.Second, Burst: 50}
	const n, run = 3, 3 * time.Second
	proxy, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	var as []*Admission
	for i := range n {
		addr := srv.Addr
		if i == 0 {
			addr = proxy.Addr()
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond,
			ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
		t.Cleanup(func() { rdb.Close() })
		a, err := NewAdmission(rdb, WithPrefix(nsFor(t)), WithSKURate(sku), WithInstances(n), WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	budget := float64(sku.Burst) + float64(sku.Count)*run.Seconds()
	healthy := admitFor(as, "healthy", run)
	t.Logf("healthy: admitted %d of a budget of %.0f", healthy[0]+healthy[1]+healthy[2], budget)
	if h := float64(healthy[0] + healthy[1] + healthy[2]); h < 0.9*budget || h > budget+2 {
		t.Fatalf("healthy fleet admitted %.0f, want about its budget %.0f", h, budget)
	}
	proxy.Blackhole(faultproxy.Both)
	got := admitFor(as, "hot", run)
	total := got[0] + got[1] + got[2]
	slack := float64(sku.Burst)/n + float64(sku.Count)*(members.TTL+members.Beat).Seconds()/n
	t.Logf("one cut off: admitted %d (cut off: %d, the others: %d, %d); budget %.0f, slack %.0f", total, got[0], got[1], got[2], budget, slack)
	if float64(total) > budget+slack+2 {
		t.Fatalf("the fleet admitted %d with one process cut off, over the budget %.0f + slack %.0f", total, budget, slack)
	}
}

// admitFor has every Admission ask for sku every millisecond (a new user
// each time) for d and returns how many each admitted.
func admitFor(as []*Admission, sku string, d time.Duration) []int64 {
	admitted := make([]atomic.Int64, len(as))
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; time.Now().Before(end); j++ {
				if a.Allow(context.Background(), sku, fmt.Sprintf("u%d-%d", i, j)) == nil {
					admitted[i].Add(1)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	out := make([]int64, len(as))
	for i := range admitted {
		out[i] = admitted[i].Load()
	}
	return out
}
