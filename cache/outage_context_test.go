package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

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
