//go:build unix

package cache

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestReadsBoundedOnDefaultClient: DESIGN's invariant "Redis being down
// never hangs a caller past its context" for the read path. On a client made
// with go-redis defaults (ContextTimeoutEnabled off) against a frozen
// server, Get and GetMany should return soon after their context's
// deadline, as the writes do (TestWritesBoundedOnDefaultClient).
//
// The read path does not hand its calls to a goroutine yet (the writes do),
// so on such a client a read is bounded by the client's own timeouts, not
// by the caller's deadline; cache/doc.go says so. The test runs with
// CACHEGUARD_KNOWN_LIMITS=1 and fails until the read path is bounded too.
func TestReadsBoundedOnDefaultClient(t *testing.T) {
	if os.Getenv("CACHEGUARD_KNOWN_LIMITS") != "1" {
		t.Skip("known limit: reads on a client without ContextTimeoutEnabled are bounded by its own timeouts (CACHEGUARD_KNOWN_LIMITS=1 runs it)")
	}
	srv, rdb := redistest.RealSingleDefault(t)
	c := newCache[string](t, rdb)
	if err := c.Set(context.Background(), "k", "v"); err != nil { // a connection open
		t.Fatal(err)
	}
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	load := func(context.Context, string) (string, error) { return "v", nil }
	loadMany := func(_ context.Context, keys []string) (map[string]string, error) { return nil, nil }
	const budget, margin = 300 * time.Millisecond, 500 * time.Millisecond
	redistest.CheckBounded(t, "Get (a hit) against a frozen server", budget, margin, func(ctx context.Context) error {
		_, err := c.Get(ctx, "k", load)
		return err
	}, context.DeadlineExceeded)
	redistest.CheckBounded(t, "GetMany against a frozen server", budget, margin, func(ctx context.Context) error {
		_, err := c.GetMany(ctx, []string{"k", "m"}, loadMany)
		return err
	}, context.DeadlineExceeded)
}
