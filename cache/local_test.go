package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// localCache returns a cache with a local tier admitting every key, once its
// invalidation subscription is up.
func localCache(t *testing.T, rdb redis.UniversalClient, opts ...Option) *Cache[string] {
	t.Helper()
	return localCacheWith(t, rdb, Values[string]{}, opts...)
}

// localCacheWith is localCache with values (tags, a TTL function).
func localCacheWith(t *testing.T, rdb redis.UniversalClient, values Values[string], opts ...Option) *Cache[string] {
	t.Helper()
	c := newCacheWith(t, rdb, values, append([]Option{WithLocal(1 << 20), WithLocalAdmitAll()}, opts...)...)
	<-c.bus.Subscribed()
	return c
}

func never(t *testing.T) Loader[string] {
	return func(context.Context, string) (string, error) {
		t.Error("loader called")
		return "", errors.New("loader called")
	}
}

// countHook counts the commands a client sends.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

func TestLocalHitSkipsRedis(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := srv.Client()
	ctx := context.Background()
	c := localCache(t, rdb)
	if v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "v", nil }); err != nil || v != "v" {
		t.Fatal(v, err)
	}
	var cmds atomic.Int64
	rdb.AddHook(countHook{&cmds})
	for i := 0; i < 100; i++ {
		if v, err := c.Get(ctx, "k", never(t)); err != nil || v != "v" {
			t.Fatal(v, err)
		}
	}
	if n := cmds.Load(); n != 0 {
		t.Fatalf("%d Redis commands for 100 local hits", n)
	}
	if st := c.Stats(); st.LocalHits != 100 {
		t.Fatalf("local hits %d", st.LocalHits)
	}
	load := never(t)
	if n := testing.AllocsPerRun(1000, func() { c.Get(ctx, "k", load) }); n != 0 {
		t.Fatalf("local hit allocates %v times", n)
	}
}

// hotSet is a HotKeys with a fixed answer (the detector itself is tested in
// the hotkey package).
type hotSet struct {
	mu      sync.Mutex
	hot     map[string]bool
	records []string
}

func (h *hotSet) Record(k string) { h.mu.Lock(); h.records = append(h.records, k); h.mu.Unlock() }
func (h *hotSet) IsHot(k string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hot[k]
}

func TestOnlyHotKeysAreAdmitted(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	hot := &hotSet{hot: map[string]bool{"hot": true}}
	c := newCache[string](t, rdb, WithLocal(1<<20), WithHotKeys(hot))
	<-c.bus.Subscribed()
	load := func(_ context.Context, k string) (string, error) { return "v" + k, nil }
	c.Get(ctx, "hot", load)
	c.Get(ctx, "cold", load)
	if _, ok := c.tier.Store().Get("hot"); !ok {
		t.Fatal("hot key not promoted")
	}
	if _, ok := c.tier.Store().Get("cold"); ok {
		t.Fatal("cold key admitted")
	}
	if !slices.Equal(hot.records, []string{"hot", "cold"}) {
		t.Fatalf("recorded %v", hot.records)
	}
}

// Two instances: after A writes, B stops serving its local copy once the
// invalidation arrives. The time from A's write returning to B dropping the
// key is the staleness bound; it is logged.
func TestInvalidationAcrossInstances(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		redistest.NeedServer(t) // miniredis has no sharded pub/sub for the cluster case, and the figure should be real
		ctx := context.Background()
		got := make(chan []string, 1)
		a := localCache(t, rdb)
		b := localCache(t, rdb, WithPrefix(prefixFor(t)), withHooks(&hooks{OnInvalidate: func(k []string) { got <- k }}))
		const rounds = 200
		lat := make([]time.Duration, 0, rounds)
		for i := 0; i < rounds; i++ {
			key := fmt.Sprint("k", i%10)
			old := fmt.Sprint("old", i)
			a.Set(ctx, key, old)
			// Drain the invalidation a's Set sent to b.
			if keys := <-got; keys[0] != key {
				t.Fatalf("invalidated %v, want %s", keys, key)
			}
			if v, _ := b.Get(ctx, key, never(t)); v != old {
				t.Fatalf("b read %q", v)
			}
			if e, ok := b.tier.Store().Get(key); !ok || e.Value != old {
				t.Fatal("b did not keep a local copy")
			}
			var start time.Time
			if i%2 == 0 {
				a.Set(ctx, key, "new")
			} else {
				a.Delete(ctx, key)
			}
			start = time.Now()
			<-got
			lat = append(lat, time.Since(start))
			if _, ok := b.tier.Store().Get(key); ok {
				t.Fatal("b still holds the key after the invalidation")
			}
			want := "new"
			load := never(t)
			if i%2 == 1 {
				want, load = "reloaded", func(context.Context, string) (string, error) { return "reloaded", nil }
			}
			if v, _ := b.Get(ctx, key, load); v != want {
				t.Fatalf("b served %q after a's write, want %q", v, want)
			}
			// b now holds want; the next round's Set invalidates it.
		}
		slices.Sort(lat)
		t.Logf("staleness after the writer's call returned: p50 %v, p99 %v, max %v (%d writes)",
			lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], rounds)
	})
}

// A cut subscription turns the local tier off and flushes it when it comes
// back, so a message lost in the gap cannot leave a stale entry.
func TestLostSubscriptionFlushesLocal(t *testing.T) {
	redistest.NeedServer(t)
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		up := make(chan struct{}, 4)
		inval := make(chan struct{}, 4)
		a := localCache(t, rdb)
		b := localCache(t, rdb, WithPrefix(prefixFor(t)), withHooks(&hooks{
			OnSubscribed: func() { up <- struct{}{} },
			OnInvalidate: func([]string) { inval <- struct{}{} },
		}))
		<-up // the first subscription
		a.Set(ctx, "k", "old")
		<-inval // so that it cannot land in the middle of b's read
		if v, _ := b.Get(ctx, "k", never(t)); v != "old" {
			t.Fatal(v)
		}
		if _, ok := b.tier.Store().Get("k"); !ok {
			t.Fatal("not cached locally")
		}
		// Cut every pub/sub connection, on every node.
		killPubSub(t, ctx, rdb)
		<-up // b noticed, resubscribed and flushed
		if _, ok := b.tier.Store().Get("k"); ok {
			t.Fatal("local tier kept an entry across a subscription gap")
		}
		if st := b.Stats(); st.LocalFlushes < 2 {
			t.Fatalf("local flushes %d, want a flush on resubscription", st.LocalFlushes)
		}
		// A write whose message b may have missed is not served stale.
		rdb.Set(ctx, prefixFor(t)+"k", "garbage", time.Minute) // bypasses pub/sub entirely
		a.Set(ctx, "k", "new")
		if v, _ := b.Get(ctx, "k", never(t)); v != "new" {
			t.Fatalf("b served %q", v)
		}
	})
}

func killPubSub(t *testing.T, ctx context.Context, rdb redis.UniversalClient) {
	t.Helper()
	kill := func(c *redis.Client) error { return c.ClientKillByFilter(ctx, "TYPE", "pubsub").Err() }
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return kill(c) })
	} else {
		err = kill(rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// While Redis fails, a key in the local tier is served from memory within the
// stale bound; other keys get ErrRedis, and the loader is never called.
func TestHotKeyServedStaleWhileRedisDown(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	ctx := context.Background()
	c := localCache(t, rdb, WithLocalStale(time.Minute))
	c.Get(ctx, "hot", func(context.Context, string) (string, error) { return "v", nil })
	e, ok := c.tier.Store().Get("hot")
	if !ok {
		t.Fatal("not admitted")
	}
	c.tier.Age(e, true, false) // past its local TTL: a fresh hit would go to Redis
	srv.Kill()
	if v, err := c.Get(ctx, "hot", never(t)); err != nil || v != "v" {
		t.Fatalf("hot key during outage: %q, %v", v, err)
	}
	if _, err := c.Get(ctx, "cold", never(t)); !errors.Is(err, ErrRedis) {
		t.Fatalf("cold key during outage: %v", err)
	}
	if st := c.Stats(); st.StaleServed != 1 {
		t.Fatalf("stale served %d", st.StaleServed)
	}
	c.tier.Age(e, true, true) // past the stale bound too
	if _, err := c.Get(ctx, "hot", never(t)); !errors.Is(err, ErrRedis) {
		t.Fatalf("past the stale bound: %v", err)
	}
}

// Values.LocalStore hands the store to the cache: whether New fails (on any
// option, before or after it built the local tier) or the cache is closed,
// the store is closed exactly once, so that its caller never has to guess.
func TestNewClosesGivenStoreWhatever(t *testing.T) {
	rdb := sharedSingleFor(t)
	for name, opts := range map[string][]Option{
		"bad option":        {WithTTL(-time.Second), WithLocalAdmitAll()},
		"no prefix":         {WithLocalAdmitAll()},
		"no admission rule": {WithPrefix(prefixFor(t))},
		"nil client":        nil, // below
	} {
		s := &mapStore[string]{}
		var err error
		if name == "nil client" {
			_, err = New(nil, Values[string]{LocalStore: s}, append(opts, WithPrefix(prefixFor(t)), WithLocalAdmitAll())...)
		} else {
			_, err = New(rdb, Values[string]{LocalStore: s}, opts...)
		}
		if err == nil {
			t.Fatalf("%s: New succeeded", name)
		}
		if n := s.closed.Load(); n != 1 {
			t.Errorf("%s: store closed %d times after New failed (%v), want 1", name, n, err)
		}
	}
	s := &mapStore[string]{}
	c, err := New(rdb, Values[string]{LocalStore: s}, WithPrefix(prefixFor(t)), WithLocalAdmitAll())
	if err != nil {
		t.Fatal(err)
	}
	if n := s.closed.Load(); n != 0 {
		t.Fatalf("store closed %d times by a New that succeeded", n)
	}
	c.Close()
	if n := s.closed.Load(); n != 1 {
		t.Errorf("store closed %d times after Close, want 1", n)
	}
}

func TestLocalOptions(t *testing.T) {
	_, rdb := newSingle(t)
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocal(1<<20)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("local tier without an admission rule: %v", err)
	}
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocal(-1)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("negative size: %v", err)
	}
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocalRistretto(0), WithLocalAdmitAll()); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("zero ristretto size: %v", err)
	}
	for _, two := range []struct {
		store LocalStore[string]
		opts  []Option
	}{
		{nil, []Option{WithLocal(1 << 20), WithLocalRistretto(1 << 20)}},
		{nil, []Option{WithLocalRistretto(1 << 20), WithLocal(1 << 20)}},
		{&mapStore[string]{}, []Option{WithLocal(1 << 20)}},
		{&mapStore[string]{}, []Option{WithLocalRistretto(1 << 20)}},
	} {
		if _, err := New(rdb, Values[string]{LocalStore: two.store}, append(two.opts, WithLocalAdmitAll(), WithPrefix("opt:"))...); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("two options choosing the local store: %v", err)
		}
	}
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocalTTL(0)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("zero local TTL: %v", err)
	}
}

// The ristretto store serves local hits through the cache once it applied
// the admission, and neither a cache's Close nor a New that fails after
// building the store leaves ristretto's goroutines running.
func TestRistrettoStoreInCache(t *testing.T) {
	srv, rdb := newSingle(t)
	ctx := context.Background()
	c, err := New(rdb, Values[string]{}, WithPrefix(prefixFor(t)), WithLocalRistretto(1<<20), WithLocalAdmitAll())
	if err != nil {
		t.Fatal(err)
	}
	<-c.bus.Subscribed()
	load := func(context.Context, string) (string, error) { return "v", nil }
	for deadline := time.Now().Add(10 * time.Second); c.Stats().LocalHits == 0; {
		if v, err := c.Get(ctx, "k", load); err != nil || v != "v" {
			t.Fatal(v, err)
		}
		if time.Now().After(deadline) {
			t.Fatal("never served from the local tier")
		}
		time.Sleep(time.Millisecond)
	}
	c.Close()
	noRistrettoGoroutines(t, "after Close")

	// New fails after the store was built: WithTracking on a Ring.
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr}})
	defer ring.Close()
	if _, err := New(ring, Values[string]{}, WithPrefix("opt:"), WithLocalRistretto(1<<20), WithLocalAdmitAll(), WithTracking()); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("WithTracking on a Ring: %v, want ErrInvalidOption", err)
	}
	noRistrettoGoroutines(t, "after New failed")
}

// noRistrettoGoroutines fails t if goroutines running ristretto's code stay
// (no other test runs a ristretto store at the same time).
func noRistrettoGoroutines(t *testing.T, when string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	n := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n = 0
		for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "dgraph-io/ristretto/") {
				n++
			}
		}
		if n == 0 {
			return
		}
	}
	t.Fatalf("%d goroutines of ristretto's still running %s", n, when)
}
