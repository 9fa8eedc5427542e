package cache

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A writer without a local tier still tells the readers that have one.
func TestWriterWithoutLocalTierInvalidatesReaders(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	got := make(chan []string, 4)
	reader := localCache(t, rdb, withHooks(&hooks{onInvalidate: func(k []string) { got <- k }}))
	writer := newCache[string](t, rdb, WithPrefix(prefixFor(t)))
	writer.Set(ctx, "k", "old")
	<-got // that Set's own message, so it cannot land during the read below
	if v, _ := reader.Get(ctx, "k", never(t)); v != "old" {
		t.Fatal(v)
	}
	settle(reader)
	if _, ok := reader.local.Get("k"); !ok {
		t.Fatal("reader did not keep a local copy")
	}
	writer.Set(ctx, "k", "new")
	<-got
	if v, _ := reader.Get(ctx, "k", never(t)); v != "new" {
		t.Fatalf("reader served %q after the writer's Set", v)
	}
}

// A TTL shorter than the default null TTL is accepted: the null TTL follows.
func TestShortTTLAccepted(t *testing.T) {
	_, rdb := newSingle(t)
	c, err := New[string](rdb, WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.cfg.nullTTL != 30*time.Second {
		t.Fatalf("null TTL %v", c.cfg.nullTTL)
	}
	if _, err := New[string](rdb, WithTTL(30*time.Second), WithNullTTL(time.Minute)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("explicit null TTL over TTL: %v", err)
	}
}

// A refresh keeps the entry's version; MarkStale keeps a versioned tombstone.
func TestVersionSurvivesRefreshAndMarkStale(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb, WithEarlyRefresh(1))
	c.SetVersioned(ctx, "k", "v5", 5)
	filled := make(chan bool, 1)
	c.hooks.onFill = func(_ string, ok bool) { filled <- ok }
	nearExpiry(c, 10*time.Minute)
	c.Get(ctx, "k", func(context.Context, string) (string, error) { return "refreshed", nil })
	if !<-filled {
		t.Fatal("refresh refused")
	}
	if ok, _ := c.SetVersioned(ctx, "k", "v3", 3); ok {
		t.Fatal("older versioned write accepted after a refresh")
	}
	c.DeleteVersioned(ctx, "t", 7)
	c.MarkStale(ctx, time.Minute, "t")
	if ok, _ := c.SetVersioned(ctx, "t", "v6", 6); ok {
		t.Fatal("older versioned write accepted after MarkStale of a tombstone")
	}
}

// A codec that panics during a shared fill is an error, not a crash.
func TestCodecPanicIsAnError(t *testing.T) {
	_, rdb := newSingle(t)
	c := newCache[user](t, rdb, WithCodec(panicCodec{}))
	_, err := c.Get(context.Background(), "k", func(context.Context, string) (user, error) { return user{1, "a"}, nil })
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("err = %v", err)
	}
}

type panicCodec struct{}

func (panicCodec) Marshal(any) ([]byte, error) { panic("codec bug") }
func (panicCodec) Unmarshal([]byte, any) error { panic("codec bug") }

// Callers' own deadlines do not open the breaker for everyone.
func TestDeadlinesDoNotTripBreaker(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	c := newCache[string](t, rdb, WithCircuitBreaker(2, time.Hour))
	load := func(context.Context, string) (string, error) { return "v", nil }
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Microsecond)
		c.Get(ctx, "k", load)
		cancel()
	}
	if _, err := c.Get(context.Background(), "k", load); err != nil {
		t.Fatalf("patient caller after impatient ones: %v", err)
	}
}

// A fallback load's joiner waits only as long as its own context.
func TestFallbackJoinerKeepsItsContext(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	rdb := fastFailClient(t, srv.Addr)
	c := newCache[string](t, rdb, WithFallbackLoads(1))
	srv.Kill()
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), "k", func(context.Context, string) (string, error) {
			close(entered)
			<-release
			return "v", nil
		})
		first <- err
	}()
	<-entered
	// The joiner's deadline passes while the shared load is still blocked:
	// it must return then, not when the load does.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "k", never(t)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("joiner past its deadline: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
