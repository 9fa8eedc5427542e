//go:build unix

package cache

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestWritesBoundedOnDefaultClient: on a client made with go-redis defaults
// (ContextTimeoutEnabled off, so go-redis ignores a deadline while it reads
// a reply), every write against a frozen server returns soon after its
// context's deadline with an error matching context.DeadlineExceeded, and
// Close still returns (the calls left running end by the client's timeouts).
func TestWritesBoundedOnDefaultClient(t *testing.T) {
	srv, rdb := redistest.RealSingleDefault(t)
	c := newCache[string](t, rdb)
	if err := c.Set(context.Background(), "k", "v"); err != nil { // scripts loaded, a connection open
		t.Fatal(err)
	}
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	const budget, margin = 300 * time.Millisecond, 500 * time.Millisecond
	for what, write := range map[string]func(ctx context.Context) error{
		"Set":                  func(ctx context.Context) error { return c.Set(ctx, "k", "w") },
		"Delete":               func(ctx context.Context) error { return c.Delete(ctx, "k") },
		"MarkStale":            func(ctx context.Context) error { return c.MarkStale(ctx, time.Second, "k") },
		"DeleteKeepingVersion": func(ctx context.Context) error { return c.DeleteKeepingVersion(ctx, time.Second, "k") },
		"SetVersioned": func(ctx context.Context) error {
			_, err := c.SetVersioned(ctx, "k", "w", 7)
			return err
		},
	} {
		redistest.CheckBounded(t, what+" against a frozen server", budget, margin, write, context.DeadlineExceeded)
	}
}
