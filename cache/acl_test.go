package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The ACL tests run the cache as a Redis user granted exactly the lines of
// docs/acl.md (redistest.ACLClient), on a single node and on a cluster.

// onACL runs body on a single node and a cluster with a client logged in
// as a user granted the document's cache blocks and the extra ones.
func onACL(t *testing.T, extra []string, body func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	vars := func(t *testing.T) map[string]string { return map[string]string{"prefix": prefixFor(t)} }
	redistest.OnACL(t, true, append([]string{"cache"}, extra...), vars, func(t *testing.T, rdb, _ redis.UniversalClient) {
		body(t, rdb, prefixFor(t))
	})
}

// errLog records the errors a cache reports (WithErrorHandler).
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// aclRows is the database behind the ACL tests' caches.
type aclRows struct {
	rows  sync.Map
	loads atomic.Int64
}

func (r *aclRows) load(_ context.Context, key string) (string, error) {
	r.loads.Add(1)
	v, ok := r.rows.Load(key)
	if !ok {
		return "", ErrNotFound
	}
	return v.(string), nil
}

func (r *aclRows) loadMany(ctx context.Context, keys []string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range keys {
		if v, err := r.load(ctx, k); err == nil {
			out[k] = v
		}
	}
	return out, nil
}

// aclLocalCache is a cache with a local tier on rdb, reporting to errs; up
// is closed once its invalidation subscription is confirmed.
func aclLocalCache(t *testing.T, rdb redis.UniversalClient, errs *errLog, h *hooks, opts ...Option) (c *Cache[string], up <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	var once sync.Once
	if h == nil {
		h = &hooks{}
	}
	h.OnSubscribed = func() { once.Do(func() { close(ch) }) }
	c = newCacheWith(t, rdb, Values[string]{Tags: func(string, string) []string { return []string{"all"} }}, append([]Option{
		WithLocal(1 << 20), WithLocalAdmitAll(), testHealth,
		WithErrorHandler(errs.add),
		withHooks(h),
	}, opts...)...)
	return c, ch
}

func awaitUp(t *testing.T, up <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-up:
	case <-time.After(trackWait):
		t.Fatalf("%s: the invalidation subscription never came up", what)
	}
}

// getEquals waits until c.Get(key) returns want.
func getEquals(t *testing.T, c *Cache[string], rows *aclRows, key, want string) {
	t.Helper()
	var got string
	var err error
	waitFor(t, func() bool {
		got, err = c.Get(context.Background(), key, rows.load)
		return err == nil && got == want
	})
}

// Every core feature of the cache works for a user granted exactly the
// document's lines, and nothing is reported: no command, key or channel the
// cache uses is missing from them.
func TestACLCacheCore(t *testing.T) {
	onACL(t, nil, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		rows := &aclRows{}
		rows.rows.Store("k1", "v1")
		var errs errLog
		a, upA := aclLocalCache(t, rdb, &errs, nil)
		b, upB := aclLocalCache(t, rdb, &errs, nil)
		awaitUp(t, upA, "a")
		awaitUp(t, upB, "b")

		// Miss, fill, Redis hit, local hit.
		if v, err := a.Get(ctx, "k1", rows.load); err != nil || v != "v1" {
			t.Fatalf("a.Get: %q %v", v, err)
		}
		for i := 0; i < 3; i++ {
			if v, err := b.Get(ctx, "k1", rows.load); err != nil || v != "v1" {
				t.Fatalf("b.Get: %q %v", v, err)
			}
		}
		if n := rows.loads.Load(); n != 1 {
			t.Fatalf("%d loads, want 1", n)
		}
		if b.Stats().LocalHits == 0 {
			t.Fatal("no local hit on b")
		}
		// Delete reaches b's local tier.
		rows.rows.Store("k1", "v2")
		if err := a.Delete(ctx, "k1"); err != nil {
			t.Fatal(err)
		}
		getEquals(t, b, rows, "k1", "v2")
		// Set, and a null entry.
		if err := a.Set(ctx, "k2", "s2"); err != nil {
			t.Fatal(err)
		}
		getEquals(t, b, rows, "k2", "s2")
		if _, err := b.Get(ctx, "absent", rows.load); !errors.Is(err, ErrNotFound) {
			t.Fatalf("absent: %v", err)
		}
		// GetMany.
		rows.rows.Store("k3", "v3")
		got, err := a.GetMany(ctx, []string{"k1", "k2", "k3", "absent"}, rows.loadMany)
		if err != nil || got["k1"] != "v2" || got["k2"] != "s2" || got["k3"] != "v3" || len(got) != 3 {
			t.Fatalf("GetMany: %v %v", got, err)
		}
		// Versioned writes, MarkStale, DeleteKeepingVersion.
		if ok, err := a.SetVersioned(ctx, "k4", "v4@5", 5); !ok || err != nil {
			t.Fatalf("SetVersioned 5: %v %v", ok, err)
		}
		if ok, err := a.SetVersioned(ctx, "k4", "v4@4", 4); ok || err != nil {
			t.Fatalf("SetVersioned 4: %v %v", ok, err)
		}
		if ok, err := a.DeleteVersioned(ctx, "k4", 6); !ok || err != nil {
			t.Fatalf("DeleteVersioned 6: %v %v", ok, err)
		}
		if err := a.MarkStale(ctx, time.Second, "k3"); err != nil {
			t.Fatal(err)
		}
		if err := a.DeleteKeepingVersion(ctx, time.Second, "k2"); err != nil {
			t.Fatal(err)
		}
		// Tags.
		rows.rows.Store("k1", "v3")
		if err := a.InvalidateTags(ctx, "all"); err != nil {
			t.Fatal(err)
		}
		getEquals(t, b, rows, "k1", "v3")
		// Clear reaches b.
		rows.rows.Store("k1", "v4")
		if err := a.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		getEquals(t, b, rows, "k1", "v4")
		if errs := errs.all(); len(errs) > 0 {
			t.Fatalf("errors reported: %v", errs)
		}
	})
}

// A waiter on another instance's lease hears the fill on the fill channel,
// as that user.
func TestACLCacheFillNotification(t *testing.T) {
	onACL(t, nil, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		var errs errLog
		marked := make(chan struct{})
		woke := make(chan bool, 4)
		var once sync.Once
		a := newCache[string](t, rdb, WithErrorHandler(errs.add))
		b := newCache[string](t, rdb, WithErrorHandler(errs.add), withHooks(&hooks{
			NotifiedPoll: time.Minute, // only the message wakes it within the test
			OnWaitMarked: func(string) { once.Do(func() { close(marked) }) },
			OnWake:       func(_ string, notified bool) { woke <- notified },
		}))
		loaded := make(chan string, 1)
		go func() {
			v, _ := a.Get(ctx, "k", func(context.Context, string) (string, error) {
				<-marked
				return "v", nil
			})
			loaded <- v
		}()
		waitLease(t, rdb, prefix+"k")
		v, err := b.Get(ctx, "k", func(context.Context, string) (string, error) { return "", errors.New("b loaded") })
		if err != nil || v != "v" {
			t.Fatalf("b.Get: %q %v", v, err)
		}
		if notified := <-woke; !notified {
			t.Fatal("b woke to poll, not by the fill message")
		}
		<-loaded
		if errs := errs.all(); len(errs) > 0 {
			t.Fatalf("errors reported: %v", errs)
		}
	})
}

// waitLease waits until rkey holds a lease placeholder.
func waitLease(t *testing.T, rdb redis.UniversalClient, rkey string) {
	t.Helper()
	waitFor(t, func() bool {
		v, err := rdb.Get(context.Background(), rkey).Result()
		return err == nil && wire.Classify([]byte(v)).IsPlaceholder()
	})
}

// With WithTracking, a write that bypasses the cache reaches the local tier
// through CLIENT TRACKING, as that user.
func TestACLCacheTracking(t *testing.T) {
	onACL(t, []string{"cache tracking"}, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		rows := &aclRows{}
		rows.rows.Store("k", "v1")
		tracking := make(chan bool, 16)
		var errs errLog
		c, up := aclLocalCache(t, rdb, &errs,
			&hooks{OnTracking: func(up bool) { tracking <- up }}, WithTracking(), WithLocalTTL(time.Minute))
		awaitUp(t, up, "c")
		select {
		case ok := <-tracking:
			if !ok {
				t.Fatal("tracking went down")
			}
		case <-time.After(trackWait):
			t.Fatal("tracking never came up")
		}
		waitFor(t, func() bool {
			v, err := c.Get(ctx, "k", rows.load)
			_, ok := c.tier.Store().Get("k")
			return err == nil && v == "v1" && ok
		})
		rows.rows.Store("k", "v2")
		if err := rdb.Del(ctx, prefix+"k").Err(); err != nil { // not through the cache
			t.Fatal(err)
		}
		getEquals(t, c, rows, "k", "v2")
		if st := c.Stats(); st.TrackingInvalidations == 0 {
			// What else dropped the copy says why.
			t.Fatalf("no tracking invalidation (tracking flushes %d, downs %d, local flushes %d; errors reported: %v)",
				st.TrackingFlushes, st.TrackingDowns, st.LocalFlushes, errs.all())
		}
		if errs := errs.all(); len(errs) > 0 {
			t.Fatalf("errors reported: %v", errs)
		}
	})
}
