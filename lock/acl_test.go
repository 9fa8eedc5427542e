package lock

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Mutex, a waiter woken by a release, RWMutex and Semaphore work for a Redis
// user granted exactly the lines of docs/acl.md, on a single node and a
// cluster; nothing is refused to it and nothing is logged.
func TestACLLockCore(t *testing.T) {
	redistest.NeedServer(t)
	for _, top := range []struct {
		redistest.Topology
		blocks []string
	}{
		{redistest.Topologies()[0], []string{"connection", "lock", "lock single"}},
		{redistest.Topologies()[1], []string{"connection", "cluster", "lock", "lock cluster"}},
	} {
		t.Run(top.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			rdb := redistest.ACLClient(t, top.New(t), map[string]string{"lock-prefix": prefix}, top.blocks...)
			var logs syncBuffer
			c := newClient(t, rdb, WithPrefix(prefix), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			ctx := testCtx(t)

			m := c.Mutex("m")
			h, err := m.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				h2, err := m.Lock(ctx) // waits for the release
				if err == nil {
					err = h2.Unlock(ctx)
				}
				got <- err
			}()
			waitWaiting(t, ctx, rdb, prefix+"{m}"+":waiters")
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}

			rw := c.RWMutex("rw")
			r1, err := rw.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := rw.RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rw.TryLock(ctx); err == nil {
				t.Fatal("writer got the lock past two readers")
			}
			for _, r := range []*Handle{r1, r2} {
				if err := r.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			w, err := rw.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Unlock(ctx); err != nil {
				t.Fatal(err)
			}

			s := c.Semaphore("s", 2)
			p, err := s.Acquire(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.TryAcquire(ctx, 1); err == nil {
				t.Fatal("third permit of two")
			}
			if err := p.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if out := logs.String(); out != "" {
				t.Fatalf("logged: %s", out)
			}
		})
	}
}

// waitWaiting waits until a client is on the wait list key.
func waitWaiting(t *testing.T, ctx context.Context, rdb redis.UniversalClient, key string) {
	t.Helper()
	for {
		n, err := rdb.ZCard(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no waiter on the wait list")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A Redis 7 user created the usual way (~* +@all) has no channel
// permission. Releases still succeed (their announcement is skipped), a
// waiter still gets the lock (it polls), and the refused subscription is
// logged: the degraded mode of docs/acl.md.
func TestACLLockNoChannelPermission(t *testing.T) {
	redistest.NeedServer(t)
	for _, top := range redistest.Topologies() {
		t.Run(top.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			rdb := redistest.ACLClientRefused(t, top.New(t), nil, "no channels")
			var logs syncBuffer
			c := newClient(t, rdb, WithPrefix(prefix), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			ctx := testCtx(t)

			m := c.Mutex("m")
			h, err := m.Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				h2, err := m.Lock(ctx)
				if err == nil {
					err = h2.Unlock(ctx)
				}
				got <- err
			}()
			waitWaiting(t, ctx, rdb, prefix+"{m}"+":waiters")
			if err := h.Unlock(ctx); err != nil {
				t.Fatalf("Unlock with a waiter: %v", err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			s := c.Semaphore("s", 1)
			p, err := s.Acquire(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Unlock(ctx); err != nil {
				t.Fatalf("semaphore Unlock: %v", err)
			}
			r, err := c.RWMutex("rw").RLock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Unlock(ctx); err != nil {
				t.Fatalf("read lock Unlock: %v", err)
			}
			if out := logs.String(); !strings.Contains(out, "NOPERM") {
				t.Fatalf("the refused subscription was not logged: %q", out)
			}
		})
	}
}
