package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// outageFleet returns n limiters of loads sharing lim across n instances,
// each with its own client to srv, on the clock now.
func outageFleet(t *testing.T, srv *redistest.Server, n int, lim Limit, now func() time.Time) []*Limiter {
	t.Helper()
	var ls []*Limiter
	for range n {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 100 * time.Millisecond})
		t.Cleanup(func() { rdb.Close() })
		l, err := New(rdb, WithLoads(lim), WithInstances(n), WithRetryAfter(10*time.Second), withClock(now))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	return ls
}

// askAll asks every limiter times times for a load of key and returns how
// many were admitted.
func askAll(t *testing.T, ls []*Limiter, key string, times int) int {
	t.Helper()
	n := 0
	for _, l := range ls {
		for range times {
			ok, _ := l.Allow(context.Background(), cache.LimitLoad, key)
			if ok {
				n++
			}
		}
	}
	return n
}

// Twenty instances share 2 loads a second with bursts of 2 (a tenth of a
// token each), and Redis dies. However often they are asked, the fleet never
// admits more than the shared limiter would have since the outage began
// (2 + 2/s), in the first second (at most 4) or in the next minute, yet
// admits about its budget over the minute. After Redis has come back and the
// local buckets have sat unused for an hour, a second outage starts within
// the budget too.
func TestOutageShareWithinSharedBudget(t *testing.T) {
	srv := redistest.Start(t)
	var ns atomic.Int64
	ns.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, ns.Load()) }
	const n = 20
	lim := Limit{Rate: 2, Per: time.Second, Burst: 2}
	ls := outageFleet(t, srv, n, lim, now)
	const step = 100 * time.Millisecond
	// outage runs d of an outage, asking every limiter three times a step,
	// and returns what was admitted in its first second and in all; it
	// fails if the fleet ever runs ahead of the shared budget.
	outage := func(name string, d time.Duration) (first, all int) {
		for at := time.Duration(0); at < d; at += step {
			all += askAll(t, ls, "hot", 3)
			if at < time.Second {
				first = all
			}
			if budget := float64(lim.burst()) + float64(lim.Rate)*at.Seconds(); float64(all) > budget {
				t.Errorf("%s: %d admitted %v into the outage, over the shared budget of %.0f", name, all, at, budget)
				return first, all
			}
			ns.Add(int64(step))
		}
		return first, all
	}
	srv.Kill()
	first, all := outage("first outage", time.Minute)
	t.Logf("first outage: %d admitted in its first second (budget 4), %d in a minute (budget %d)", first, all, lim.burst()+60*lim.Rate)
	// Each instance starts empty, lower by a random fraction of a token,
	// and the minute ends a step before its last token: it may admit two
	// fewer than its 60·r/n.
	if min := 60*lim.Rate - 2*n; all < min {
		t.Errorf("first outage: %d admitted in a minute, want at least %d", all, min)
	}

	srv.Restart()
	ns.Add(int64(10 * time.Second)) // past the retry delay: Redis is asked again
	askAll(t, ls, "hot", 1)
	ns.Add(int64(time.Hour))
	srv.Kill()
	first, _ = outage("second outage", time.Second)
	t.Logf("second outage: %d admitted in its first second (budget 4)", first)
	for i, l := range ls {
		if st := l.Stats(); st.StoreErrors == 0 || st.LocalDecisions == 0 {
			t.Fatalf("limiter %d: stats %+v", i, st)
		}
	}
}
