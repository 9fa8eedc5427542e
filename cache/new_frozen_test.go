//go:build unix

package cache

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// New asks Redis for its version and its generation; against a frozen server
// each waits at most the health-check timeout, which the caller sets, even on
// a client made with go-redis defaults (whose 3 s read timeout no context
// cancels). New then returns a working Cache: Redis need not be up.
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
	// Two round trips of at most timeout each; the margin is for a loaded
	// machine, and stays under the 3 s a read would wait without the bound.
	if el > 2*timeout+2*time.Second {
		t.Fatalf("New took %v on a frozen server, health-check timeout %v", el, timeout)
	}
}
