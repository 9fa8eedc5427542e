package cache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/redis/go-redis/v9"
)

// ttlByValue is the TTL func of the tests: the value names its TTL.
func ttlByValue(_ string, v string) time.Duration {
	switch v {
	case "minute":
		return time.Minute
	case "hour":
		return time.Hour
	case "zero":
		return 0
	case "negative":
		return -time.Second
	case "huge":
		return 2 * entry.MaxTTL
	case "panic":
		panic("bad value")
	}
	return 10 * time.Second
}

// reported collects what the error handler is given.
type reported struct {
	mu   sync.Mutex
	errs map[string]error
}

// handler files each error under the key its *KeyError names.
func (r *reported) handler(err error) {
	var ke *KeyError
	if !errors.As(err, &ke) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[ke.Key] = ke.Err
}

func (r *reported) get(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs[key]
}

// checkPTTL fails unless the key's TTL in Redis is base within the jitter.
func checkPTTL(t *testing.T, rdb redis.UniversalClient, rkey string, base time.Duration) {
	t.Helper()
	pttl := rdb.PTTL(context.Background(), rkey).Val()
	if pttl < base*8/10 || pttl > base*11/10 {
		t.Fatalf("%s: PTTL %v, want %v entry.Jittered by 10%%", rkey, pttl, base)
	}
}

// Each value's TTL comes from the func; 0 is served but not cached (the
// lease released); negative, too long or a panic are the same, reported.
func TestTTLFuncFillsAndWrites(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		rep := &reported{errs: map[string]error{}}
		c := newCacheWith(t, rdb, Values[string]{TTL: ttlByValue}, runPrefix(t), WithJitter(0.1), WithErrorHandler(rep.handler))
		p := c.cfg.prefix
		value := func(_ context.Context, key string) (string, error) { return key, nil } // the key names its value
		for _, k := range []string{"minute", "hour"} {
			if v, err := c.Get(ctx, k, value); err != nil || v != k {
				t.Fatalf("Get %s = %q, %v", k, v, err)
			}
		}
		checkPTTL(t, rdb, p+"minute", time.Minute)
		checkPTTL(t, rdb, p+"hour", time.Hour)
		for _, k := range []string{"zero", "negative", "huge", "panic"} {
			for i := 0; i < 2; i++ { // not cached: loaded each time
				if v, err := c.Get(ctx, k, value); err != nil || v != k {
					t.Fatalf("Get %s = %q, %v", k, v, err)
				}
			}
			if n := rdb.Exists(ctx, p+k).Val(); n != 0 {
				t.Fatalf("%s: key left in Redis (lease not released?)", k)
			}
			err := rep.get(k)
			if k == "zero" && err != nil {
				t.Fatalf("0 reported: %v", err)
			}
			if k != "zero" && !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("%s: reported %v, want ErrInvalidOption", k, err)
			}
		}
		st := c.Stats()
		if st.TTLZero != 2 || st.TTLInvalid != 6 || st.Loads != 10 {
			t.Fatalf("TTLZero %d TTLInvalid %d Loads %d; want 2, 6, 10", st.TTLZero, st.TTLInvalid, st.Loads)
		}
		// GetMany follows the same rule.
		got, err := c.GetMany(ctx, []string{"m1", "m2"}, func(_ context.Context, keys []string) (map[string]string, error) {
			return map[string]string{"m1": "minute", "m2": "zero"}, nil
		})
		if err != nil || got["m1"] != "minute" || got["m2"] != "zero" {
			t.Fatalf("GetMany = %v, %v", got, err)
		}
		checkPTTL(t, rdb, p+"m1", time.Minute)
		if rdb.Exists(ctx, p+"m2").Val() != 0 {
			t.Fatal("GetMany cached a value whose TTL is 0")
		}
		// Set: a value not to be cached removes the old one.
		if err := c.Set(ctx, "minute", "zero"); err != nil {
			t.Fatal(err)
		}
		if rdb.Exists(ctx, p+"minute").Val() != 0 {
			t.Fatal("Set of a value whose TTL is 0 left the old value")
		}
		c.Set(ctx, "s", "hour")
		checkPTTL(t, rdb, p+"s", time.Hour)
		// SetVersioned: a version tombstone, so an older version is refused.
		if ok, err := c.SetVersioned(ctx, "v", "negative", 5); err != nil || !ok {
			t.Fatalf("SetVersioned = %v, %v", ok, err)
		}
		if ok, _ := c.SetVersioned(ctx, "v", "minute", 4); ok {
			t.Fatal("an older version landed over the tombstone")
		}
		if v, _ := c.Get(ctx, "v", value); v != "v" {
			t.Fatalf("Get after a not-cached versioned write = %q, want a reload", v)
		}
		// A refresh takes its TTL from the refreshed value.
		filled := make(chan bool, 1)
		c.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		c.Set(ctx, "r", "hour")
		c.MarkStale(ctx, time.Minute, "r")
		c.Get(ctx, "r", func(context.Context, string) (string, error) { return "minute", nil })
		if !<-filled {
			t.Fatal("refresh refused")
		}
		checkPTTL(t, rdb, p+"r", time.Minute)
	})
}
