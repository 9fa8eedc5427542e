package lock

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// logLines receives what a logger writes, a line per write.
type logLines chan string

func (l logLines) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

// logged returns what was written so far.
func (l logLines) logged() string {
	var all strings.Builder
	for {
		select {
		case line := <-l:
			all.WriteString(line)
		default:
			return all.String()
		}
	}
}

// aclClient returns a lock client as a user granted blocks, and its log.
func aclClient(t *testing.T, top redistest.ACLTopology, refused bool, blocks ...string) (*Client, redis.UniversalClient, logLines, string) {
	t.Helper()
	prefix := redistest.Prefix(t)
	vars := map[string]string{"lock-prefix": prefix}
	var rdb redis.UniversalClient
	if refused {
		rdb = redistest.ACLClientRefused(t, top.New(t), vars, blocks...)
	} else {
		rdb = redistest.ACLClient(t, top.New(t), vars, blocks...)
	}
	logs := make(logLines, 64)
	return newClient(t, rdb, WithPrefix(prefix), WithLogger(slog.New(slog.NewTextHandler(logs, nil)))), rdb, logs, prefix
}

// handOver locks m, starts a waiter, waits until it is on the wait list,
// unlocks and waits for the waiter to get and release the lock.
func handOver(t *testing.T, ctx context.Context, rdb redis.UniversalClient, m *Mutex, waiters string) {
	t.Helper()
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
	waitWaiting(t, ctx, rdb, waiters)
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with a waiter: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// Mutex, a waiter woken by a release, RWMutex and Semaphore work for a Redis
// user granted exactly the lines of docs/acl.md, on a single node and a
// cluster; nothing is refused to it and nothing is logged.
func TestACLLockCore(t *testing.T) {
	redistest.NeedServer(t)
	for _, top := range redistest.ACLTopologies(false) {
		t.Run(top.Name, func(t *testing.T) {
			c, rdb, logs, prefix := aclClient(t, top, false, top.Blocks("lock")...)
			ctx := testCtx(t)
			handOver(t, ctx, rdb, c.Mutex("m"), prefix+"{m}:waiters")

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
			if out := logs.logged(); out != "" {
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
	for _, top := range redistest.ACLTopologies(false) {
		t.Run(top.Name, func(t *testing.T) {
			c, rdb, logs, prefix := aclClient(t, top, true, "no channels")
			ctx := testCtx(t)
			handOver(t, ctx, rdb, c.Mutex("m"), prefix+"{m}:waiters")
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
			if out := logs.logged(); !strings.Contains(out, "NOPERM") {
				t.Fatalf("the refused subscription was not logged: %q", out)
			}
		})
	}
}
