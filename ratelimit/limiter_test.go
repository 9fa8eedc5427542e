package ratelimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	// Tests that kill servers or connections make go-redis log every failed
	// dial and read.
	redistest.MainQuiet(m)
}

// loadClock records when the database was read.
type loadClock struct {
	mu sync.Mutex
	at []time.Time
}

func (c *loadClock) load(context.Context, string) (string, error) {
	c.mu.Lock()
	c.at = append(c.at, time.Now())
	c.mu.Unlock()
	return strings.Repeat("v", 200), nil // over the caches' size limit: never cached
}

// busiestSecond returns the most loads within any one second.
func (c *loadClock) busiestSecond() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := slices.Clone(c.at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, j := 0, 0; i < len(at); i++ {
		for j < len(at) && at[j].Sub(at[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

func (c *loadClock) total() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.at) }

// process is one instance: its own client, limiter and cache.
type process struct {
	lim    *Limiter
	cache  *cache.Cache[string]
	errs   atomic.Int64 // limiter errors reported to the cache's handler
	loads  loadClock
	reads  atomic.Int64
	refuse atomic.Int64 // Gets answered ErrRateLimited
}

const (
	loadRate  = 100
	loadBurst = 10
	processes = 3
)

func newProcess(t *testing.T, rdb redis.UniversalClient, opts ...cache.Option) *process {
	t.Helper()
	p := &process{}
	var err error
	p.lim, err = New(rdb, WithLoads(Limit{Rate: loadRate, Per: time.Second, Burst: loadBurst}), WithInstances(processes))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p.cache, err = cache.New(rdb, cache.Values[string]{}, append([]cache.Option{cache.WithPrefix(t.Name() + ":"),
		cache.WithLogger(quiet), cache.WithMaxValueSize(64), cache.WithKeyRateLimit(p.lim),
		cache.WithErrorHandler(func(err error) {
			if errors.Is(err, ErrRedis) {
				p.errs.Add(1)
			}
		})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cache.Close() })
	return p
}

// hammer reads one key from every process with several goroutines each, as
// fast as they go, for d.
func hammer(t *testing.T, ps []*process, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range ps {
		for range 16 {
			wg.Go(func() {
				for ctx.Err() == nil {
					_, err := p.cache.Get(ctx, "hot", p.loads.load)
					p.reads.Add(1)
					switch {
					case errors.Is(err, cache.ErrRateLimited):
						p.refuse.Add(1)
					case err != nil && !ended(ctx) && !errors.Is(err, cache.ErrRedis):
						t.Errorf("Get: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}

// ended reports whether ctx is over: by its error, or by its deadline alone
// (a call may return DeadlineExceeded a moment before the context's timer
// sets its error).
func ended(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(dl)
}

// A key limited to 100 loads a second (bursts of 10) across three
// processes sees no more than that many database loads in any second, while
// every read of it needs a load (its value is never cached).
func TestLoadsLimitedAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	var ps []*process
	for range processes {
		ps = append(ps, newProcess(t, srv.Client()))
	}
	const d = 2 * time.Second
	hammer(t, ps, d)
	var all loadClock
	reads, refused := int64(0), int64(0)
	for _, p := range ps {
		p.loads.mu.Lock() // a load a Get left behind may still land
		all.at = append(all.at, p.loads.at...)
		p.loads.mu.Unlock()
		reads += p.reads.Load()
		refused += p.refuse.Load()
		if st := p.lim.Stats(); st.StoreErrors != 0 {
			t.Fatalf("store errors with Redis up: %+v", st)
		}
	}
	busiest := all.busiestSecond()
	t.Logf("%d reads in %v (%.0f/s), %d loads, at most %d in one second, %d reads refused",
		reads, d, float64(reads)/d.Seconds(), all.total(), busiest, refused)
	// The GCRA bounds any second by rate + burst when decided; a load runs
	// a moment after its decision, so a second may catch a load or two
	// decided just before it.
	if busiest > loadRate+loadBurst+2 {
		t.Fatalf("%d loads within one second, limit %d + burst %d", busiest, loadRate, loadBurst)
	}
	if all.total() < loadRate || refused == 0 {
		t.Fatalf("the limit never bound: %d loads, %d refusals", all.total(), refused)
	}
}

// With Redis down each process keeps to its share (a third) of the budget,
// every fallback load included, and the failures reach the cache's error
// handler.
func TestLocalShareWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	var ps []*process
	for range processes {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 100 * time.Millisecond})
		t.Cleanup(func() { rdb.Close() })
		ps = append(ps, newProcess(t, rdb, cache.WithFallbackLoads(4)))
	}
	srv.Kill()
	_, err := ps[0].lim.Allow(context.Background(), cache.LimitLoad, "direct")
	apicheck.RedisFailure(t, ErrRedis, "Limiter.Allow", err)
	hammer(t, ps, 1500*time.Millisecond)
	share, burst := float64(loadRate)/processes, float64(loadBurst)/processes
	for i, p := range ps {
		busiest := p.loads.busiestSecond()
		st := p.lim.Stats()
		t.Logf("process %d: %d reads, %d loads, at most %d in one second (share %.1f + %.1f), %+v",
			i, p.reads.Load(), p.loads.total(), busiest, share, burst, st)
		if float64(busiest) > share+burst+2 {
			t.Errorf("process %d: %d loads within one second, share %.1f + burst %.1f", i, busiest, share, burst)
		}
		if p.loads.total() == 0 || st.LocalDecisions == 0 || st.StoreErrors == 0 || p.errs.Load() == 0 {
			t.Errorf("process %d: %d loads, %d reported errors, stats %+v", i, p.loads.total(), p.errs.Load(), st)
		}
	}
}

// Without a client every instance has the whole budget to itself.
func TestPerInstanceWithoutRedis(t *testing.T) {
	l, err := New(nil, WithLoads(Limit{Rate: 10, Per: time.Hour, Burst: 5}), WithInstances(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	for range 20 {
		if ok, err := l.Allow(ctx, cache.LimitLoad, "k"); err != nil {
			t.Fatal(err)
		} else if ok {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("%d admitted, want the burst of 5", n)
	}
	if ok, _ := l.Allow(ctx, cache.LimitRead, "k"); !ok {
		t.Fatal("reads have no limit, yet one was refused")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Option{WithLoads(Limit{Rate: 1}), WithReads(Limit{Rate: -1, Per: time.Second}),
		WithInstances(0), WithPrefix(""), WithTimeout(0), WithRetryAfter(-1), WithMaxKeys(0)} {
		if _, err := New(nil, o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("New: %v, want ErrInvalidOption", err)
		}
	}
	// A nil Option is ignored.
	if _, err := New(nil, nil); err != nil {
		t.Errorf("New(nil option): %v", err)
	}
}
