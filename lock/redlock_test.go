package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// nodeClients connects to each node without retries: a dead node should cost
// a refused connection, not the whole node timeout.
func nodeClients(t testing.TB, nodes []*redistest.Server) []redis.UniversalClient {
	var cs []redis.UniversalClient
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

func newRedlock(t testing.TB, nodes []*redistest.Server, opts ...Option) *Redlock {
	t.Helper()
	r, err := NewRedlock(nodeClients(t, nodes), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRedlock runs one set of 5 independent servers through the algorithm's
// cases: all up, 2 down (a quorum of 3 remains: still exclusive), 3 down
// (no quorum: refused, and a held lock is lost).
func TestRedlock(t *testing.T) {
	nodes := redistest.Nodes(t, 5)
	ctx := testCtx(t)
	// A generous node timeout: on a loaded machine a live node can take
	// longer than the default 50ms, and with two nodes dead a release that
	// times out on one live node blocks the quorum until the lease ends.
	// Dead nodes refuse connections at once either way.
	a, b := newRedlock(t, nodes, WithNodeTimeout(time.Second)), newRedlock(t, nodes, WithNodeTimeout(time.Second))
	if a.Quorum() != 3 {
		t.Fatalf("quorum %d", a.Quorum())
	}
	direct := nodeClients(t, nodes)
	keyCount := func() (n int) {
		for _, c := range direct {
			if heldIn(ctx, c, "cacheguard:lock:{red}") {
				n++
			}
		}
		return n
	}

	t.Run("all up", func(t *testing.T) {
		h, err := a.Mutex("red", WithLease(10*time.Second), WithoutWatchdog()).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v := h.Validity(); v <= 9*time.Second || v > 10*time.Second {
			t.Fatalf("validity %v", v)
		}
		if h.Token() <= 0 {
			t.Fatalf("redlock token %d", h.Token())
		}
		if n := keyCount(); n != 5 {
			t.Fatalf("held on %d nodes", n)
		}
		hx, err := b.Mutex("red").TryLock(ctx)
		mustNotObtain(t, hx, err)
		if ttl, err := h.TTL(ctx); err != nil || ttl <= 9*time.Second {
			t.Fatalf("ttl %v %v", ttl, err)
		}
		if err := h.Extend(ctx, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		if v := h.Validity(); v <= 19*time.Second {
			t.Fatalf("validity after extend %v", v)
		}
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if n := keyCount(); n != 0 {
			t.Fatalf("left on %d nodes after unlock", n)
		}
	})

	nodes[0].Kill()
	nodes[1].Kill()

	t.Run("2 of 5 down", func(t *testing.T) {
		// Two Redlock clients, 8 goroutines each, increment a plain counter.
		counter := 0
		var wg sync.WaitGroup
		for _, r := range []*Redlock{a, b} {
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := r.Mutex("red", WithLease(2*time.Second), WithBackoff(time.Millisecond, 20*time.Millisecond))
					for i := 0; i < 10; i++ {
						h, err := m.Lock(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						v := counter
						time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
						counter = v + 1
						if err := h.Unlock(ctx); err != nil {
							t.Error(err)
						}
					}
				}()
			}
		}
		wg.Wait()
		if counter != 80 {
			t.Fatalf("counter %d, want 80", counter)
		}
		h, err := a.Mutex("red").TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hx, err := b.Mutex("red").TryLock(ctx)
		mustNotObtain(t, hx, err)
		if n := keyCount(); n != 3 {
			t.Fatalf("held on %d live nodes, want 3", n)
		}
		h.Unlock(ctx)
	})

	t.Run("3 of 5 down", func(t *testing.T) {
		held, err := a.Mutex("red", WithLease(300*time.Millisecond)).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nodes[2].Kill()
		// The holder cannot renew on a quorum any more: it is told.
		waitDone(t, held.Context(), 10*time.Second, "redlock lost signal")
		if err := context.Cause(held.Context()); !errors.Is(err, ErrLost) {
			t.Fatalf("cause %v", err)
		}
		held.Unlock(ctx)

		_, err = b.Mutex("red").TryLock(ctx)
		if !errors.Is(err, ErrNotObtained) {
			t.Fatalf("TryLock with 2 of 5 nodes: %v", err)
		}
		t.Logf("refused: %v", err)
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err = b.Mutex("red").Lock(wctx)
		if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock with 2 of 5 nodes: %v", err)
		}
		// Failed attempts gave back what the live nodes granted.
		if n := keyCount(); n != 0 {
			t.Fatalf("failed attempts left the lock on %d nodes", n)
		}
	})
}
