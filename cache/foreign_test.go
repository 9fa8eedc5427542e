package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A key holding another Redis type is foreign data: a miss that the fill
// overwrites, for Get and for GetMany, where it does not fail the other keys.
func TestForeignTypeIsAMiss(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		p := prefixFor(t)
		for _, k := range []string{"list", "l1", "l2"} {
			if err := rdb.RPush(ctx, p+k, "foreign").Err(); err != nil {
				t.Fatal(err)
			}
		}
		load := func(_ context.Context, k string) (string, error) { return "v" + k, nil }
		if v, err := c.Get(ctx, "list", load); err != nil || v != "vlist" {
			t.Fatalf("Get over a list = %q, %v", v, err)
		}
		if v, err := c.Get(ctx, "list", load); err != nil || v != "vlist" {
			t.Fatalf("second Get = %q, %v", v, err)
		}
		many := func(_ context.Context, ks []string) (map[string]string, error) {
			m := map[string]string{}
			for _, k := range ks {
				m[k] = "v" + k
			}
			return m, nil
		}
		got, err := c.GetMany(ctx, []string{"l1", "fine", "l2"}, many)
		if err != nil || got["l1"] != "vl1" || got["fine"] != "vfine" || got["l2"] != "vl2" {
			t.Fatalf("GetMany with foreign keys = %v, %v", got, err)
		}
		for _, k := range []string{"list", "l1", "l2"} {
			if typ := rdb.Type(ctx, p+k).Val(); typ != "string" {
				t.Errorf("%s is still a %s", k, typ)
			}
		}
	})
}

// A placeholder lookalike without a TTL (no lease is ever written without
// one) does not block readers forever: the next fill replaces it.
func TestPersistentPlaceholderHeals(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb, WithWait(200*time.Millisecond))
		p := prefixFor(t)
		var tok [wire.TokenSize]byte
		copy(tok[:], "stuck-forever...")
		for _, k := range []string{"a", "b"} {
			if err := rdb.Set(ctx, p+k, wire.Placeholder(tok), 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if v, err := c.Get(ctx, "a", func(context.Context, string) (string, error) { return "va", nil }); err != nil || v != "va" {
			t.Fatalf("Get over a persistent placeholder = %q, %v", v, err)
		}
		got, err := c.GetMany(ctx, []string{"b"}, func(context.Context, []string) (map[string]string, error) {
			return map[string]string{"b": "vb"}, nil
		})
		if err != nil || got["b"] != "vb" {
			t.Fatalf("GetMany over a persistent placeholder = %v, %v", got, err)
		}
		for _, k := range []string{"a", "b"} {
			raw, _ := rdb.Get(ctx, p+k).Bytes()
			if entry.Classify(raw) != entry.Envelope {
				t.Errorf("%s still holds %q", k, raw)
			}
		}
	})
}

// New rejects options that cannot work, saying why.
func TestOptionEdgeCases(t *testing.T) {
	rdb := sharedSingleFor(t)
	cases := []struct {
		name string
		new  func() error
	}{
		{"huge TTL", func() error {
			_, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithTTL(math.MaxInt64))
			return err
		}},
		{"huge null TTL", func() error {
			_, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithNullTTL(math.MaxInt64))
			return err
		}},
		{"huge local TTL", func() error {
			_, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocal(1<<20), WithLocalAdmitAll(), WithLocalTTL(math.MaxInt64))
			return err
		}},
		{"interface value with JSON", func() error { _, err := New(rdb, Values[any]{}, WithPrefix("opt:")); return err }},
		{"Stringer value with JSON", func() error { _, err := New(rdb, Values[fmt.Stringer]{}, WithPrefix("opt:")); return err }},
		{"hot keys without a local tier", func() error {
			_, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithHotKeys(allHot{}))
			return err
		}},
		{"local admit-all without a local tier", func() error {
			_, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocalAdmitAll())
			return err
		}},
	}
	for _, tc := range cases {
		err := tc.new()
		if !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: New = %v, want ErrInvalidOption", tc.name, err)
			continue
		}
		if msg := strings.TrimPrefix(err.Error(), ErrInvalidOption.Error()+": "); msg == "" || msg == err.Error() {
			t.Errorf("%s: %q says nothing about why", tc.name, err)
		}
	}
	// An interface value with a codec that records types is fine.
	c, err := New(rdb, Values[any]{}, WithPrefix("opt:"), WithCodec(GobCodec{}))
	if err != nil {
		t.Fatalf("interface value with gob: %v", err)
	}
	c.Close()
}

type allHot struct{}

func (allHot) Record(string)     {}
func (allHot) IsHot(string) bool { return true }

// An envelope with a flag this reader does not implement (one from a newer
// writer) is a miss that is reloaded, never bytes served as a value.
func TestUnknownEnvelopeFlagIsAMiss(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		p := prefixFor(t)
		unread := []byte{1 << 7, 1 << 5}
		for i, flag := range unread {
			k := fmt.Sprint("k", i)
			env := wire.AppendEnvelope(nil, flag, 0, time.Now().Add(time.Hour), 0, []byte("\x1f\x8bgarbage"))
			if err := rdb.Set(ctx, p+k, env, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(ctx, k, func(context.Context, string) (string, error) { return "loaded", nil }); err != nil || v != "loaded" {
				t.Errorf("flag %#x: Get = %q, %v; want a reload", flag, v, err)
			}
		}
	})
}

// A call the breaker keeps away from Redis is counted on its own, not as a
// Redis error, and its message does not repeat itself.
func TestBreakerRejectsCountedApart(t *testing.T) {
	srv, rdb := newSingle(t)
	ctx := context.Background()
	// No generation sync in the test's time: one failing against the
	// killed server would count a Redis error of its own.
	c := newCache[string](t, rdb, WithCircuitBreaker(1, time.Hour), WithInvalidationHealthCheck(time.Hour, time.Second))
	if err := c.Ready(ctx); err != nil { // the first sync is behind us
		t.Fatal(err)
	}
	srv.Kill()
	load := func(context.Context, string) (string, error) { return "v", nil }
	if _, err := c.Get(ctx, "k", load); !errors.Is(err, ErrRedis) {
		t.Fatalf("Get with Redis down = %v", err)
	}
	_, err := c.Get(ctx, "k", load)
	if !errors.Is(err, ErrCircuitOpen) || !errors.Is(err, ErrRedis) {
		t.Fatalf("Get with the breaker open = %v", err)
	}
	if strings.Count(err.Error(), "cacheguard") != 1 {
		t.Errorf("error stutters: %q", err)
	}
	if st := c.Stats(); st.RedisErrors != 1 || st.BreakerRejects != 1 {
		t.Errorf("RedisErrors %d, BreakerRejects %d; want 1, 1", st.RedisErrors, st.BreakerRejects)
	}
}
