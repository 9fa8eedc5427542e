package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Close racing any mix of calls on a cache with a local tier never panics,
// and every call made after Close returns ErrClosed.
func TestCloseRacingCallsNoPanic(t *testing.T) {
	rdb := sharedSingleFor(t)
	ctx := context.Background()
	for round := 0; round < 30; round++ {
		c, err := New(rdb, Values[string]{}, WithPrefix(fmt.Sprintf("%s%d:", prefixFor(t), round)), WithLocal(1<<20), WithLocalAdmitAll(), WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		load := func(_ context.Context, k string) (string, error) { return k, nil }
		many := func(_ context.Context, ks []string) (map[string]string, error) {
			m := map[string]string{}
			for _, k := range ks {
				m[k] = k
			}
			return m, nil
		}
		var wg sync.WaitGroup
		var ops sync.WaitGroup // closed once every goroutine made a few calls
		ops.Add(8)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if i == 5 {
						ops.Done()
					}
					k := fmt.Sprint(i % 5)
					var err error
					switch (g + i) % 4 {
					case 0:
						_, err = c.Get(ctx, k, load)
					case 1:
						_, err = c.GetMany(ctx, []string{k, "x" + k}, many)
					case 2:
						err = c.Set(ctx, k, "v")
					case 3:
						err = c.Delete(ctx, k)
					}
					if errors.Is(err, ErrClosed) {
						if i < 5 {
							ops.Done()
						}
						return
					}
				}
			}()
		}
		ops.Wait()
		c.Close()
		wg.Wait()
		if _, err := c.Get(ctx, "k", load); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get after Close: %v", err)
		}
		if _, err := c.GetMany(ctx, []string{"k"}, many); !errors.Is(err, ErrClosed) {
			t.Fatalf("GetMany after Close: %v", err)
		}
		if err := c.Set(ctx, "k", "v"); !errors.Is(err, ErrClosed) {
			t.Fatalf("Set after Close: %v", err)
		}
		if err := c.Delete(ctx, "k"); !errors.Is(err, ErrClosed) {
			t.Fatalf("Delete after Close: %v", err)
		}
		if err := c.MarkStale(ctx, time.Second, "k"); !errors.Is(err, ErrClosed) {
			t.Fatalf("MarkStale after Close: %v", err)
		}
	}
}

// Close releases the leases of the fills it cancels, so that other processes
// do not wait them out; it returns only when the fills' goroutines are gone.
func TestCloseReleasesLeases(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		loading := make(chan struct{}, 2)
		load := func(ctx context.Context, _ string) (string, error) {
			loading <- struct{}{}
			<-ctx.Done() // a loader that honours cancellation
			return "", ctx.Err()
		}
		many := func(ctx context.Context, _ []string) (map[string]string, error) {
			loading <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		getDone := make(chan error, 1)
		go func() { _, err := c.Get(ctx, "g", load); getDone <- err }()
		manyDone := make(chan error, 1)
		go func() { _, err := c.GetMany(ctx, []string{"m1", "m2"}, many); manyDone <- err }()
		<-loading
		<-loading
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for _, k := range []string{"g", "m1", "m2"} {
			if n := rdb.Exists(ctx, prefixFor(t)+k).Val(); n != 0 {
				t.Errorf("lease on %q left in Redis after Close", k)
			}
		}
		if err := <-getDone; err == nil {
			t.Error("Get in flight during Close succeeded")
		}
		if err := <-manyDone; err == nil {
			t.Error("GetMany in flight during Close succeeded")
		}
	})
}

// A loader that ignores cancellation cannot hold Close past its timeout, and
// its lease is released anyway; its fill, when it finally returns, is refused.
func TestCloseIsBounded(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb, WithCloseTimeout(100*time.Millisecond))
		loading := make(chan struct{})
		release := make(chan struct{})
		filled := make(chan bool, 1)
		c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		go c.Get(ctx, "k", func(context.Context, string) (string, error) {
			close(loading)
			<-release // ignores its context
			return "late", nil
		})
		<-loading
		if err := c.Close(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close with a stuck loader = %v, want a deadline error", err)
		}
		if n := rdb.Exists(ctx, prefixFor(t)+"k").Val(); n != 0 {
			t.Error("lease left in Redis after Close")
		}
		close(release)
		if <-filled {
			t.Error("a fill landed after Close released its lease")
		}
	})
}

// GetMany whose context ends while it loads returns at once; its fill runs
// on, detached, as a Get's does, and releases its leases when the load
// fails (Close waits for it).
func TestGetManyCancelReleasesLeases(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		ctx, cancel := context.WithCancel(context.Background())
		release := make(chan struct{})
		_, err := c.GetMany(ctx, []string{"a", "b"}, func(context.Context, []string) (map[string]string, error) {
			cancel()
			<-release
			return nil, errors.New("the load failed")
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("GetMany = %v, want context.Canceled", err)
		}
		close(release)
		c.Close()
		for _, k := range []string{"a", "b"} {
			if n := rdb.Exists(context.Background(), prefixFor(t)+k).Val(); n != 0 {
				t.Errorf("lease on %q left in Redis", k)
			}
		}
	})
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func sharedSingleFor(t *testing.T) redis.UniversalClient { return redistest.SharedSingle(t) }
