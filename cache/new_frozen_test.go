//go:build unix

package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// New does no I/O: against a frozen server it returns at once, even on a
// client made with go-redis defaults (whose 3 s read timeout no context
// cancels); Ready returns by the caller's deadline, with an error that says
// so; a Get waits for the first sync at most the health-check timeout, then
// fails as any call on a frozen server does. Redis need not be up.
func TestNewBoundedOnFrozenServer(t *testing.T) {
	srv, rdb := redistest.RealSingleDefault(t)
	if err := rdb.Ping(t.Context()).Err(); err != nil { // a pooled connection, as a running service has
		t.Fatal(err)
	}
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	const timeout = 100 * time.Millisecond
	start := time.Now()
	c, err := New(rdb, Values[string]{}, WithPrefix(prefixFor(t)), WithInvalidationHealthCheck(time.Second, timeout),
		WithCloseTimeout(timeout))
	el := time.Since(start)
	if err != nil {
		t.Fatalf("New on a frozen server: %v", err)
	}
	defer c.Close()
	if el > 100*time.Millisecond {
		t.Fatalf("New took %v on a frozen server", el)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = c.Ready(ctx)
	el = time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready on a frozen server: %v, want the caller's deadline", err)
	}
	// The margin is for a loaded machine, and stays under the 3 s a read
	// would wait without the bound.
	if el > time.Second {
		t.Fatalf("Ready took %v on a frozen server with a 50 ms deadline", el)
	}
}
