package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// batchErr returns err as a *BatchError, failing the test if it is not one.
func batchErr(t *testing.T, err error) *BatchError {
	t.Helper()
	var be *BatchError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v (%T), want a *BatchError", err, err)
	}
	return be
}

// rowsOf is a batch loader that knows rows and records what it was asked.
func rowsOf(rows map[string]string, asked *[][]string) BatchLoader[string] {
	return func(_ context.Context, keys []string) (map[string]string, error) {
		*asked = append(*asked, slices.Clone(keys))
		out := map[string]string{}
		for _, k := range keys {
			if v, ok := rows[k]; ok {
				out[k] = v
			}
		}
		return out, nil
	}
}

// One key whose lease another process holds past the wait budget fails
// alone, with ErrWaitTimeout; the batch's other keys are returned, a key of
// another Redis type is a miss (not an error) and a missing row is absent.
func TestGetManyPerKeyWaitTimeout(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		p := prefixFor(t)
		if err := rdb.RPush(ctx, p+"list", "foreign").Err(); err != nil {
			t.Fatal(err)
		}
		holder := newCache[string](t, rdb, WithPrefix(p))
		entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			holder.Get(ctx, "held", func(context.Context, string) (string, error) {
				close(entered)
				<-release
				return "late", nil
			})
		}()
		<-entered
		defer func() { close(release); <-done }()

		c := newCache[string](t, rdb, WithWait(30*time.Millisecond))
		var asked [][]string
		got, err := c.GetMany(ctx, []string{"a", "held", "list", "gone", "a"}, rowsOf(map[string]string{"a": "va", "list": "vlist"}, &asked))
		if got["a"] != "va" || got["list"] != "vlist" || len(got) != 2 {
			t.Fatalf("got %v, want a and list", got)
		}
		if !errors.Is(err, ErrWaitTimeout) {
			t.Fatalf("err = %v, want ErrWaitTimeout", err)
		}
		be := batchErr(t, err)
		if keys := be.Keys(); !slices.Equal(keys, []string{"held"}) {
			t.Fatalf("failed keys %v, want [held]", keys)
		}
		if !errors.Is(be.Err("held"), ErrWaitTimeout) || be.Err("a") != nil || be.Err("list") != nil || be.Err("gone") != nil {
			t.Fatalf("per-key errors: held %v, a %v, list %v, gone %v", be.Err("held"), be.Err("a"), be.Err("list"), be.Err("gone"))
		}
		if errors.Is(err, ErrRedis) {
			t.Errorf("err %v matches ErrRedis", err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "cacheguard: cache: 1 of 4 keys failed: \"held\": timed out") {
			t.Errorf("message %q", msg)
		}
		for _, ks := range asked {
			if slices.Contains(ks, "held") {
				t.Errorf("loader asked for the held key: %v", asked)
			}
		}
	})
}

// A loader error is the error of the keys that loader call was asked for;
// a key another process is filling meanwhile is still waited for and
// returned.
func TestGetManyLoaderErrorOnlyFailsItsKeys(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		p := prefixFor(t)
		holder := newCache[string](t, rdb, WithPrefix(p))
		entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			holder.Get(ctx, "held", func(context.Context, string) (string, error) {
				close(entered)
				<-release
				return "from holder", nil
			})
		}()
		<-entered
		c := newCache[string](t, rdb, WithWait(10*time.Second))
		var once bool
		c.hooks().OnLeaseWait = func(k string) {
			if k == "held" && !once {
				once = true
				close(release) // the holder fills while we wait
			}
		}
		boom := errors.New("db down")
		got, err := c.GetMany(ctx, []string{"a", "held", "b"}, func(_ context.Context, keys []string) (map[string]string, error) {
			if !slices.Equal(keys, []string{"a", "b"}) {
				t.Errorf("loader asked for %v, want [a b]", keys)
			}
			return nil, boom
		})
		<-done
		if got["held"] != "from holder" || len(got) != 1 {
			t.Fatalf("got %v, want held from its holder", got)
		}
		be := batchErr(t, err)
		if !slices.Equal(be.Keys(), []string{"a", "b"}) || !errors.Is(be.Err("a"), boom) || !errors.Is(be.Err("b"), boom) || be.Err("held") != nil {
			t.Fatalf("failed keys %v: %v", be.Keys(), err)
		}
		if !errors.Is(err, boom) {
			t.Errorf("errors.Is(err, boom) false for %v", err)
		}
		for _, k := range []string{"a", "b"} {
			if rdb.Exists(ctx, p+k).Val() != 0 {
				t.Errorf("lease on %q left behind", k)
			}
		}
	})
}

// During a Redis outage each key gets Get's policy on its own: a stale local
// entry, a fallback load (whose failure fails that key only), an absence,
// or, without fallback loads, ErrRedis.
func TestGetManyPerKeyOutage(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	ctx := context.Background()
	boom := errors.New("row unreadable")
	var fallback [][]string
	withFallback := localCache(t, rdb, WithLocalStale(time.Minute), WithFallbackLoads(4))
	plain := localCache(t, rdb, WithPrefix(prefixFor(t)+"plain:"), WithLocalStale(time.Minute))
	for _, c := range []*Cache[string]{withFallback, plain} {
		if v, err := c.Get(ctx, "hot", func(context.Context, string) (string, error) { return "v", nil }); err != nil || v != "v" {
			t.Fatalf("warming: %q, %v", v, err)
		}
		e, ok := c.tier.Store().Get("hot")
		if !ok {
			t.Fatal("not admitted")
		}
		c.tier.Age(e, true, false) // past its local TTL: only an outage serves it
	}
	srv.Kill()

	got, err := withFallback.GetMany(ctx, []string{"hot", "ok", "bad", "missing"}, func(_ context.Context, keys []string) (map[string]string, error) {
		fallback = append(fallback, slices.Clone(keys))
		if slices.Contains(keys, "bad") {
			return nil, boom
		}
		if slices.Contains(keys, "ok") {
			return map[string]string{"ok": "loaded"}, nil
		}
		return nil, nil
	})
	if got["hot"] != "v" || got["ok"] != "loaded" || len(got) != 2 {
		t.Fatalf("got %v, want hot (stale) and ok (fallback)", got)
	}
	be := batchErr(t, err)
	if !slices.Equal(be.Keys(), []string{"bad"}) || !errors.Is(be.Err("bad"), boom) {
		t.Fatalf("failed keys %v: %v", be.Keys(), err)
	}
	for _, ks := range fallback {
		if len(ks) != 1 || ks[0] == "hot" {
			t.Errorf("fallback loads %v, want one key each, never the stale one", fallback)
		}
	}

	got, err = plain.GetMany(ctx, []string{"cold", "hot"}, func(context.Context, []string) (map[string]string, error) {
		t.Error("loader called without fallback loads")
		return nil, nil
	})
	if got["hot"] != "v" || len(got) != 1 {
		t.Fatalf("got %v, want hot only", got)
	}
	be = batchErr(t, err)
	if !slices.Equal(be.Keys(), []string{"cold"}) || !errors.Is(be.Err("cold"), ErrRedis) || !errors.Is(err, ErrRedis) {
		t.Fatalf("failed keys %v: %v", be.Keys(), err)
	}
}

// A caller whose context ends keeps what was already decided; the keys
// still pending get the context's error.
func TestGetManyContextEndsPerKey(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The caller's context ends once a's fill landed (fills run
		// detached from it, as a Get's do).
		c := newCache[string](t, rdb, withHooks(&hooks{OnFill: func(k string, ok bool) {
			if k == "a" && ok {
				cancel()
			}
		}}))
		entered, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			c.Get(context.Background(), "slow", func(context.Context, string) (string, error) {
				close(entered)
				<-release
				return "slow", nil
			})
		}()
		<-entered
		defer func() { close(release); <-done }()
		// GetMany queues behind the Get's read of slow and leads a.
		got, err := c.GetMany(ctx, []string{"a", "slow"}, func(_ context.Context, keys []string) (map[string]string, error) {
			return map[string]string{"a": "va"}, nil
		})
		if got["a"] != "va" || len(got) != 1 {
			t.Fatalf("got %v, want a", got)
		}
		be := batchErr(t, err)
		if !slices.Equal(be.Keys(), []string{"slow"}) || !errors.Is(be.Err("slow"), context.Canceled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("failed keys %v: %v", be.Keys(), err)
		}
	})
}

// A call that cannot start returns a plain error and no map.
func TestGetManyUpFrontErrorsArePlain(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb)
	none := func(context.Context, []string) (map[string]string, error) { return nil, nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() (map[string]string, error){
		"nil loader": func() (map[string]string, error) { return c.GetMany(context.Background(), []string{"a"}, nil) },
		"empty key":  func() (map[string]string, error) { return c.GetMany(context.Background(), []string{"a", ""}, none) },
		"ended ctx":  func() (map[string]string, error) { return c.GetMany(cancelled, []string{"a"}, none) },
	} {
		got, err := call()
		var be *BatchError
		if got != nil || err == nil || errors.As(err, &be) {
			t.Errorf("%s: %v, %v; want a plain error and no map", name, got, err)
		}
	}
	if got, err := c.GetMany(context.Background(), nil, none); err != nil || len(got) != 0 {
		t.Errorf("no keys: %v, %v", got, err)
	}
}
