package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

type user struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

func TestGetLoadsOnceThenHits(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[user](t, rdb)
		l := &countingLoader[user]{rows: map[string]user{"1": {1, "ada"}}}
		for i := 0; i < 5; i++ {
			u, err := c.Get(ctx, "1", l.load)
			if err != nil || u != (user{1, "ada"}) {
				t.Fatalf("Get = %+v, %v", u, err)
			}
		}
		if n := l.calls.Load(); n != 1 {
			t.Fatalf("loader ran %d times, want 1", n)
		}
		st := c.Stats()
		if st.Hits != 4 || st.Misses != 1 || st.Loads != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestMissingRowIsCachedAsNull(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[user](t, rdb, WithNullTTL(30*time.Second))
		l := &countingLoader[user]{}
		for i := 0; i < 20; i++ {
			_, err := c.Get(ctx, "nope", l.load)
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get err = %v, want ErrNotFound", err)
			}
		}
		if n := l.calls.Load(); n != 1 {
			t.Fatalf("loader ran %d times for a missing row, want 1", n)
		}
		if st := c.Stats(); st.NullHits != 19 {
			t.Fatalf("null hits %d, want 19", st.NullHits)
		}
		pttl := rdb.PTTL(ctx, prefixFor(t)+"nope").Val()
		if pttl <= 0 || pttl > 33*time.Second {
			t.Fatalf("null entry PTTL %v, want within the entry.Jittered null TTL", pttl)
		}
	})
}

func TestWrappedNotFoundFromLoader(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb)
	_, err := c.Get(context.Background(), "k", func(context.Context, string) (string, error) {
		return "", fmt.Errorf("repo: user 7: %w", ErrNotFound)
	})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestLoaderErrorIsReturnedAndNotCached(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		boom := errors.New("db down")
		_, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "", boom })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the loader's", err)
		}
		// Lease released: nothing under the key, and the next Get loads at once.
		if n := rdb.Exists(ctx, prefixFor(t)+"k").Val(); n != 0 {
			t.Fatal("lease not released after a loader error")
		}
		v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "ok", nil })
		if err != nil || v != "ok" {
			t.Fatalf("Get after error = %q, %v", v, err)
		}
	})
}

func TestLoaderPanicBecomesError(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb)
	_, err := c.Get(context.Background(), "k", func(context.Context, string) (string, error) { panic("bug") })
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("err = %v, want a panic turned into an error", err)
	}
}

// Values that look like the envelope's or the lease's markers are values.
func TestLookalikeValuesRoundTrip(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		lookalikes := []string{"", "*", "null", "\xfe", "\xfel", "\xfec", string(wire.Placeholder([16]byte{1, 2, 3})),
			string(wire.AppendEnvelope(nil, wire.FlagNull, 0, time.Now(), 0, nil))}
		for i, want := range lookalikes {
			key := fmt.Sprint("k", i)
			got, err := c.Get(ctx, key, func(context.Context, string) (string, error) { return want, nil })
			if err != nil || got != want {
				t.Fatalf("load %q: got %q, %v", want, got, err)
			}
			got, err = c.Get(ctx, key, func(context.Context, string) (string, error) {
				t.Fatal("loader called on a hit")
				return "", nil
			})
			if err != nil || got != want {
				t.Fatalf("hit %q: got %q, %v", want, got, err)
			}
			if err := c.Set(ctx, key+"s", want); err != nil {
				t.Fatal(err)
			}
			got, err = c.Get(ctx, key+"s", func(context.Context, string) (string, error) {
				t.Fatal("loader called after Set")
				return "", nil
			})
			if err != nil || got != want {
				t.Fatalf("after Set %q: got %q, %v", want, got, err)
			}
		}
	})
}

func TestBytesValuesRoundTrip(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[[]byte](t, rdb)
	want := []byte{0, 0xfe, 'l', 0xff}
	got, err := c.Get(context.Background(), "b", func(context.Context, string) ([]byte, error) { return want, nil })
	if err != nil || string(got) != string(want) {
		t.Fatalf("got %v, %v", got, err)
	}
	got, err = c.Get(context.Background(), "b", nil)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil loader: %v", err)
	}
	got, err = c.Get(context.Background(), "b", func(context.Context, string) ([]byte, error) { return nil, errors.New("not called") })
	if err != nil || string(got) != string(want) {
		t.Fatalf("hit: got %v, %v", got, err)
	}
}

// Keys with hash-tag braces and binary bytes are ordinary keys.
func TestOddKeys(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		for _, k := range []string{"{", "}", "{}", "{a}b", "a{b}c{d}", "\x00\xff\n", strings.Repeat("x", 4096)} {
			v, err := c.Get(ctx, k, func(_ context.Context, key string) (string, error) { return "v:" + key, nil })
			if err != nil || v != "v:"+k {
				t.Fatalf("key %q: %q, %v", k, v, err)
			}
			if err := c.Delete(ctx, k); err != nil {
				t.Fatalf("delete %q: %v", k, err)
			}
		}
	})
}

func TestBadInput(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb, WithMaxValueSize(8))
	ok := func(context.Context, string) (string, error) { return "v", nil }
	if _, err := c.Get(ctx, "", ok); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty key: %v", err)
	}
	if _, err := c.Get(ctx, "k", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil loader: %v", err)
	}
	if err := c.Set(ctx, "", "v"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Set empty key: %v", err)
	}
	if err := c.Delete(ctx, "a", ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Delete empty key: %v", err)
	}
	if err := c.Set(ctx, "big", "123456789"); !errors.Is(err, ErrValueTooLarge) {
		t.Errorf("Set too large: %v", err)
	}
	if _, err := c.GetMany(ctx, []string{"a", ""}, func(context.Context, []string) (map[string]string, error) { return nil, nil }); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("GetMany empty key: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Get(cancelled, "k", ok); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
}

// A loaded value over the size limit is served but not cached, and the reason
// reaches the error handler.
func TestTooLargeLoadedValueServedUncached(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	var reported error
	c := newCache[string](t, rdb, WithMaxValueSize(4), WithErrorHandler(func(err error) { reported = err }))
	v, err := c.Get(ctx, "k", func(context.Context, string) (string, error) { return "too long", nil })
	if err != nil || v != "too long" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if !errors.Is(reported, ErrValueTooLarge) {
		t.Fatalf("reported %v, want ErrValueTooLarge", reported)
	}
	if rdb.Exists(ctx, prefixFor(t)+"k").Val() != 0 {
		t.Fatal("too-large value (or its lease) left in Redis")
	}
	if c.Stats().TooLarge != 1 {
		t.Fatalf("stats %+v", c.Stats())
	}
}

// Garbage under a key is a miss: reloaded and overwritten, never returned.
func TestForeignBytesAreReplaced(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[user](t, rdb)
		garbage := []string{"hello", "\xfec\x01", "\xfec\x09" + strings.Repeat("x", 40), "\xfel123",
			string(wire.AppendEnvelope(nil, 0, 0, time.Now().Add(time.Hour), 0, []byte("{not json")))}
		for i, g := range garbage {
			key := fmt.Sprint("g", i)
			rdb.Set(ctx, prefixFor(t)+key, g, time.Hour)
			l := &countingLoader[user]{rows: map[string]user{key: {i, "fresh"}}}
			u, err := c.Get(ctx, key, l.load)
			if err != nil || u != (user{i, "fresh"}) {
				t.Fatalf("garbage %q: Get = %+v, %v", g, u, err)
			}
			if _, err := c.Get(ctx, key, l.load); err != nil || l.calls.Load() != 1 {
				t.Fatalf("garbage %q not overwritten: %d loads, %v", g, l.calls.Load(), err)
			}
		}
		if c.Stats().Corrupt == 0 {
			t.Fatal("corrupt entries not counted")
		}
	})
}

// With Redis gone, Get fails fast with ErrRedis and leaves the database alone.
func TestRedisDownReturnsErrRedis(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	c := newCache[string](t, rdb)
	srv.Kill()
	l := &countingLoader[string]{rows: map[string]string{"k": "v"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Get(ctx, "k", l.load)
	if !errors.Is(err, ErrRedis) {
		t.Fatalf("err = %v, want ErrRedis", err)
	}
	if l.calls.Load() != 0 {
		t.Fatal("loader called while Redis is down")
	}
	if err := c.Set(ctx, "k", "v"); !errors.Is(err, ErrRedis) {
		t.Fatalf("Set err = %v", err)
	}
	if err := c.Delete(ctx, "k"); !errors.Is(err, ErrRedis) {
		t.Fatalf("Delete err = %v", err)
	}
	if c.Stats().RedisErrors < 3 {
		t.Fatalf("stats %+v", c.Stats())
	}
}

func TestClosed(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[string](t, rdb)
	c.Close()
	if _, err := c.Get(context.Background(), "k", func(context.Context, string) (string, error) { return "", nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSetThenGetAndDelete(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[user](t, rdb)
		l := &countingLoader[user]{rows: map[string]user{"1": {1, "db"}}}
		if err := c.Set(ctx, "1", user{1, "set"}); err != nil {
			t.Fatal(err)
		}
		if u, _ := c.Get(ctx, "1", l.load); u.Name != "set" {
			t.Fatalf("after Set got %+v", u)
		}
		if err := c.Delete(ctx, "1", "2", "3"); err != nil {
			t.Fatal(err)
		}
		if u, _ := c.Get(ctx, "1", l.load); u.Name != "db" || l.calls.Load() != 1 {
			t.Fatalf("after Delete got %+v with %d loads", u, l.calls.Load())
		}
	})
}
