//go:build unix

package cache

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestReadsBoundedOnDefaultClient: DESIGN's invariant "Redis being down
// never hangs a caller past its context" for the read path. On a client made
// with go-redis defaults (ContextTimeoutEnabled off) against a frozen
// server, Get and GetMany return soon after their context's deadline, as
// the writes do (TestWritesBoundedOnDefaultClient).
func TestReadsBoundedOnDefaultClient(t *testing.T) {
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
