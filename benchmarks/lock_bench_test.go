package benchmarks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/lock"
)

// A lockImpl takes and releases named locks through one library. Each
// "client" of a benchmark is a separate go-redis client and library client,
// as separate processes would have.
type lockImpl struct {
	name string
	// client returns a new client of the library: a function that gives
	// the acquire function of a named lock.
	client func(b testing.TB, calls *atomic.Int64) func(key string) func(ctx context.Context) (unlock func() error, err error)
}

// open returns the acquire function of key on a new client.
func (l lockImpl) open(b testing.TB, key string, calls *atomic.Int64) func(ctx context.Context) (unlock func() error, err error) {
	return l.client(b, calls)(key)
}

// lockRedis returns a client of the shared server that counts the commands
// it sends (pipelines count each command), so that the benchmarks can report
// Redis calls per lock handover: the cost that polling puts on the server.
func lockRedis(b testing.TB, calls *atomic.Int64) *redis.Client {
	c := newClient(b)
	c.AddHook(callCounter{calls})
	return c
}

type callCounter struct{ n *atomic.Int64 }

func (h callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// lockLease is the lock TTL the libraries get where they need one.
const lockLease = 10 * time.Second

// lockRetry is how often the polling libraries retry a held lock in the
// contended runs; cacheguard is woken by the release notification instead
// (its backoff, 4 ms to 500 ms, is only the fallback).
const lockRetry = time.Millisecond

func lockImpls(contended bool) []lockImpl {
	type take = func(context.Context) (func() error, error)
	return []lockImpl{
		{"cacheguard", func(b testing.TB, calls *atomic.Int64) func(string) take {
			c, err := lock.New(lockRedis(b, calls))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			return func(key string) take {
				m := c.Mutex(key)
				t := m.TryLock
				if contended {
					t = m.Lock
				}
				return func(ctx context.Context) (func() error, error) {
					h, err := t(ctx)
					if err != nil {
						return nil, err
					}
					return func() error { return h.Unlock(ctx) }, nil
				}
			}
		}},
		{"cacheguard-ctxtimeout", func(b testing.TB, calls *atomic.Int64) func(string) take {
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr(b), ContextTimeoutEnabled: true})
			b.Cleanup(func() { rdb.Close() })
			rdb.AddHook(callCounter{calls})
			c, err := lock.New(rdb)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			return func(key string) take {
				m := c.Mutex(key)
				t := m.TryLock
				if contended {
					t = m.Lock
				}
				return func(ctx context.Context) (func() error, error) {
					h, err := t(ctx)
					if err != nil {
						return nil, err
					}
					return func() error { return h.Unlock(ctx) }, nil
				}
			}
		}},
		{"cacheguard-unfenced", func(b testing.TB, calls *atomic.Int64) func(string) take {
			c, err := lock.New(lockRedis(b, calls), lock.WithoutFencing())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			return func(key string) take {
				m := c.Mutex(key)
				t := m.TryLock
				if contended {
					t = m.Lock
				}
				return func(ctx context.Context) (func() error, error) {
					h, err := t(ctx)
					if err != nil {
						return nil, err
					}
					return func() error { return h.Unlock(ctx) }, nil
				}
			}
		}},
		{"redislock", func(b testing.TB, calls *atomic.Int64) func(string) take {
			c := redislock.New(lockRedis(b, calls))
			opt := &redislock.Options{}
			if contended {
				opt.RetryStrategy = redislock.LinearBackoff(lockRetry)
			}
			return func(key string) take {
				return func(ctx context.Context) (func() error, error) {
					l, err := c.Obtain(ctx, key, lockLease, opt)
					if err != nil {
						return nil, err
					}
					return func() error { return l.Release(ctx) }, nil
				}
			}
		}},
		{"redsync", func(b testing.TB, calls *atomic.Int64) func(string) take {
			rs := redsync.New(goredis.NewPool(lockRedis(b, calls)))
			opts := []redsync.Option{redsync.WithExpiry(lockLease), redsync.WithTries(1)}
			if contended {
				opts = append(opts, redsync.WithTries(math.MaxInt32), redsync.WithRetryDelay(lockRetry))
			}
			return func(key string) take {
				return func(ctx context.Context) (func() error, error) {
					// A redsync Mutex keeps the value of its current hold, so
					// concurrent holders each need their own.
					m := rs.NewMutex(key, opts...)
					if err := m.LockContext(ctx); err != nil {
						return nil, err
					}
					return func() error { _, err := m.UnlockContext(ctx); return err }, nil
				}
			}
		}},
	}
}

// BenchmarkLockUncontended measures one acquire plus release of a free lock:
// two round trips for every library.
func BenchmarkLockUncontended(b *testing.B) {
	ctx := context.Background()
	for _, impl := range lockImpls(false) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			var calls atomic.Int64
			take := impl.open(b, "bench:lock:uncontended:"+impl.name, &calls)
			b.ReportAllocs()
			calls.Store(0)
			for b.Loop() {
				unlock, err := take(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := unlock(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(calls.Load())/float64(b.N), "calls/op")
		})
	}
}

// BenchmarkLockUncontendedPaired alternates one uncontended acquire plus
// release of cacheguard with one of another library, and reports the median
// of each (base-sec/op, other-sec/op) and the median of their ratio per
// iteration (ratio): on a shared, noisy machine both see the same
// conditions.
//
// cacheguard-unfenced is a Mutex made WithoutFencing: no fencing token,
// which the other libraries do not issue either, so it is the like-for-like
// comparison; cacheguard (the default) draws a token on every acquisition.
//
// cacheguard-ctxtimeout is cacheguard on a go-redis client made with
// ContextTimeoutEnabled: true, which applies context deadlines to its reads,
// so that cacheguard runs each call on the caller's goroutine; on a client
// with default options it runs each call on a goroutine of its own so that
// it can return at the deadline (see lock/bounded.go). The second group
// pairs that variant with the others.
//
// Each library gets a go-redis client of its own made the same way: the
// default options in the first group, ContextTimeoutEnabled in the second
// (redislock-ctxtimeout), so that like is compared with like.
func BenchmarkLockUncontendedPaired(b *testing.B) {
	impls := lockImpls(false)
	peers := impls[3:] // redislock, redsync
	b.Run("base=cacheguard", func(b *testing.B) { lockPaired(b, impls[0], peers) })
	b.Run("base=cacheguard-unfenced", func(b *testing.B) { lockPaired(b, impls[2], peers) })
	b.Run("base=cacheguard-ctxtimeout", func(b *testing.B) {
		lockPaired(b, impls[1], []lockImpl{redislockCtxTimeout()})
	})
}

// redislockCtxTimeout is redislock on a client made with
// ContextTimeoutEnabled, the client cacheguard-ctxtimeout gets.
func redislockCtxTimeout() lockImpl {
	type take = func(context.Context) (func() error, error)
	return lockImpl{"redislock-ctxtimeout", func(b testing.TB, calls *atomic.Int64) func(string) take {
		rdb := redis.NewClient(&redis.Options{Addr: redisAddr(b), ContextTimeoutEnabled: true})
		b.Cleanup(func() { rdb.Close() })
		rdb.AddHook(callCounter{calls})
		c := redislock.New(rdb)
		return func(key string) take {
			return func(ctx context.Context) (func() error, error) {
				l, err := c.Obtain(ctx, key, lockLease, nil)
				if err != nil {
					return nil, err
				}
				return func() error { return l.Release(ctx) }, nil
			}
		}
	}}
}

func lockPaired(b *testing.B, base lockImpl, others []lockImpl) {
	ctx := context.Background()
	for _, other := range others {
		b.Run("vs="+other.name, func(b *testing.B) {
			pair := []lockImpl{base, other}
			var calls atomic.Int64
			takes := make([]func(context.Context) (func() error, error), len(pair))
			for i, impl := range pair {
				takes[i] = impl.open(b, "bench:lock:paired:"+impl.name, &calls)
			}
			samples := make([][]time.Duration, len(pair))
			var ratios []float64
			for n := 0; b.Loop(); n++ {
				for k := range takes {
					i := (n + k) % len(takes) // each goes first half the time
					start := time.Now()
					unlock, err := takes[i](ctx)
					if err != nil {
						b.Fatal(err)
					}
					if err := unlock(); err != nil {
						b.Fatal(err)
					}
					samples[i] = append(samples[i], time.Since(start))
				}
				ratios = append(ratios, float64(samples[0][n])/float64(samples[1][n]))
			}
			// The medians of each (base: the cacheguard variant), and the
			// median over iterations of the base's time over the other's
			// in the same iteration, as the hit paths' paired rows.
			for i, unit := range []string{"base-sec/op", "other-sec/op"} {
				slices.Sort(samples[i])
				b.ReportMetric(samples[i][len(samples[i])/2].Seconds(), unit)
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "ratio")
		})
	}
}

// BenchmarkLockContended measures throughput on one hot lock: 16 goroutines,
// spread over 1 or 4 clients, take it in turn and increment a plain counter
// (checked at the end, so a broken lock fails the benchmark), either at once
// (hold=0: the releaser usually takes the lock straight back) or after 1ms of
// work under the lock (hold=1ms: every handover goes to a waiter). ns/op is
// the time per handover.
func BenchmarkLockContended(b *testing.B) {
	const workers = 16
	for _, hold := range []time.Duration{0, time.Millisecond} {
		for _, clients := range []int{1, 4} {
			for _, impl := range lockImpls(true) {
				name := fmt.Sprintf("hold=%v/clients=%d/impl=%s", hold, clients, impl.name)
				b.Run(name, func(b *testing.B) { lockContended(b, impl, workers, clients, hold) })
			}
		}
	}
}

func lockContended(b *testing.B, impl lockImpl, workers, clients int, hold time.Duration) {
	key := fmt.Sprintf("bench:lock:contended:%v:%d:%s", hold, clients, impl.name)
	var calls atomic.Int64
	takes := make([]func(context.Context) (func() error, error), clients)
	for i := range takes {
		takes[i] = impl.open(b, key, &calls)
	}
	calls.Store(0)
	ctx := context.Background()
	var next atomic.Int64
	counter := 0
	waits := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		take := takes[w%clients]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				start := time.Now()
				unlock, err := take(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				waits[i-1] = time.Since(start)
				counter++
				if hold > 0 {
					time.Sleep(hold)
				}
				if err := unlock(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if !b.Failed() && counter != b.N {
		b.Fatalf("counter %d after %d locked increments", counter, b.N)
	}
	b.ReportMetric(float64(calls.Load())/float64(b.N), "calls/op")
	// How long the unluckiest callers waited: a lock that lets
	// the releaser take it straight back wins throughput by
	// starving the others.
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)*99/100])/1e6, "p99-wait-ms")
	b.ReportMetric(float64(waits[len(waits)-1])/1e6, "max-wait-ms")
}
