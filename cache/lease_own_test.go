package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A failover can keep a lease and lose the fill that replaced it: the
// promoted replica got the SET NX, not the fill the demoted master
// acknowledged after. The cache that took the lease takes its own
// placeholder over at its next read of the key and loads at once, instead
// of blocking the key's readers until the placeholder expires; another
// cache on the same keys waits for it as for any holder's.
func TestOwnLeaseLeftByALostFillIsTakenOver(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		other := newCache[string](t, rdb, WithWait(0))
		rkey := prefixFor(t) + "k"
		rdb.Del(ctx, rkey) // left by an earlier run of the test (-count)
		var lease []byte
		c.hooks().AfterLoad = func(string) { lease, _ = rdb.Get(ctx, rkey).Bytes() }
		if _, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "v1", nil }); err != nil {
			t.Fatal(err)
		}
		c.hooks().AfterLoad = nil
		if entry.Classify(lease) != entry.Lease {
			t.Fatalf("Redis held %q during the load, want the lease", lease)
		}
		// Redis loses the fill: the key holds the lease again, as after
		// a failover, with the whole lease to run.
		if err := rdb.Set(ctx, rkey, lease, 3*time.Second).Err(); err != nil {
			t.Fatal(err)
		}

		_, err := other.Get(ctx, "k", func(context.Context, string) (string, error) { return "other", nil })
		if !errors.Is(err, ErrWaitTimeout) {
			t.Fatalf("another cache's Get = %v, want ErrWaitTimeout (it waits for the lease as for any holder's)", err)
		}

		var waits atomic.Int64
		c.hooks().OnLeaseWait = func(string) { waits.Add(1) }
		var loads atomic.Int64
		short, cancel := context.WithTimeout(ctx, time.Second) // the placeholder has 3 s to run
		defer cancel()
		v, err := c.Get(short, "k", func(context.Context, string) (string, error) { loads.Add(1); return "v2", nil })
		if err != nil || v != "v2" {
			t.Fatalf("Get = %q, %v; want v2 loaded at once", v, err)
		}
		if loads.Load() != 1 || waits.Load() != 0 {
			t.Fatalf("%d loads, %d lease waits; want 1 load and no wait for its own placeholder", loads.Load(), waits.Load())
		}
		if v, err := other.Get(ctx, "k", func(context.Context, string) (string, error) { return "other", nil }); err != nil || v != "v2" {
			t.Fatalf("another cache's Get after the fill = %q, %v; want v2", v, err)
		}
	})
}

// A cache's own placeholder is taken over only when none of its fills holds
// it. Across a Clear, one cache has two fills of a key under way at once: a
// waiter of the generation before looks again in the new generation, where
// a Get of its own took the lease and is loading. The waiter must wait for
// that fill like any other, not take its lease over and load a second time.
func TestOwnLeaseHeldByAnotherFillIsWaitedFor(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		pre := runPrefix(t)
		c := newCache[string](t, rdb, pre)
		other := newCache[string](t, rdb, pre)
		awaitSubscribed(t, other)
		var loads atomic.Int64
		// c's first Get goes on from its first wait only once its second
		// Get holds the new generation's lease (looking again after the
		// Clear, it would take that lease itself, and the second Get
		// would load nothing).
		loading, release := make(chan struct{}), make(chan struct{})
		otherLoading, otherRelease := make(chan struct{}), make(chan struct{})
		releaseOther := sync.OnceFunc(func() { close(otherRelease) })
		defer releaseOther()
		go other.Get(ctx, "k", func(context.Context, string) (string, error) {
			loads.Add(1)
			close(otherLoading)
			<-otherRelease
			return "v", nil
		})
		<-otherLoading // the other cache holds the lease of the first generation
		waiting := make(chan struct{}, 1)
		c.hooks().OnLeaseWait = func(string) {
			select {
			case waiting <- struct{}{}:
			default:
			}
			<-loading
		}
		first := make(chan error, 1)
		go func() {
			_, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { loads.Add(1); return "v", nil })
			first <- err
		}()
		<-waiting // c's first Get waits for the other cache's lease
		c.hooks().OnLeaseWait = nil
		if err := c.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		releaseSecond := sync.OnceFunc(func() { close(release) })
		defer releaseSecond()
		second := make(chan error, 1)
		go func() {
			_, err := c.Get(ctx, "k", func(context.Context, string) (string, error) {
				loads.Add(1)
				close(loading)
				<-release
				return "v", nil
			})
			second <- err
		}()
		select {
		case <-loading: // c's second Get holds the lease of the new generation
		case err := <-second:
			t.Fatalf("the second Get ended (%v) without loading; %d loads", err, loads.Load())
		}
		waits := make(chan struct{}, 1)
		c.hooks().OnLeaseWait = func(string) {
			select {
			case waits <- struct{}{}:
			default:
			}
		}
		releaseOther() // the first generation's fill wakes c's first Get
		select {
		case <-waits: // it found its own cache's live lease and waits for it
		case err := <-first:
			t.Fatalf("the first Get ended (%v) while its cache's other fill of the key was loading; %d loads", err, loads.Load())
		}
		releaseSecond()
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if n := loads.Load(); n != 2 {
			t.Fatalf("%d loads, want one per generation", n)
		}
	})
}

// resendHook sends every lease attempt (SET ... NX GET) twice, as go-redis
// does when it loses the reply of the first and retries: the first lands,
// and the reply of the second carries the placeholder the first wrote.
type resendHook struct{ resent atomic.Int64 }

func (h *resendHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *resendHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "set" && len(args) == 7 && args[5] == "nx" && args[6] == "get" {
			first := redis.NewStatusCmd(ctx, args...)
			_ = next(ctx, first)
			h.resent.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *resendHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A lease attempt whose reply was lost and that go-redis sent again reads
// back its own placeholder: the lease is the round's, loaded at once, not
// waited for as another fill's.
func TestResentLeaseAttemptHoldsItsLease(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := srv.Client()
	h := &resendHook{}
	rdb.AddHook(h)
	c := newCache[string](t, rdb, runPrefix(t))
	var waits, loads atomic.Int64
	c.hooks().OnLeaseWait = func(string) { waits.Add(1) }
	start := time.Now()
	v, err := c.Get(context.Background(), "k", func(context.Context, string) (string, error) { loads.Add(1); return "v", nil })
	if err != nil || v != "v" {
		t.Fatal(v, err)
	}
	if h.resent.Load() != 1 || loads.Load() != 1 || waits.Load() != 0 {
		t.Fatalf("%d lease attempts sent twice, %d loads, %d waits (after %v); want the lease held at once and 1 load",
			h.resent.Load(), loads.Load(), waits.Load(), time.Since(start))
	}
}
