//go:build unix

package consistency

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestCallsBoundedOnDefaultClient: on a client made with go-redis defaults
// (ContextTimeoutEnabled off, so go-redis ignores a deadline while it reads
// a reply), every call of a target or the queue against a frozen server
// returns soon after its context's deadline, with an error matching
// context.DeadlineExceeded; an Update whose delete could not be recorded
// does not run its write.
func TestCallsBoundedOnDefaultClient(t *testing.T) {
	srv, rdb := redistest.RealSingleDefault(t)
	q := newQueue(t, rdb, WithoutWorker())
	users := register(t, q, "users", newCache[string](t, rdb))
	ctx := context.Background()
	if err := users.Delete(ctx, "warm"); err != nil { // scripts loaded, connections open
		t.Fatal(err)
	}
	srv.Freeze()
	t.Cleanup(srv.Thaw)

	const budget, margin = 300 * time.Millisecond, 500 * time.Millisecond
	check := func(what string, call func(ctx context.Context) error) {
		t.Helper()
		redistest.CheckBounded(t, what+" against a frozen server", budget, margin, call, context.DeadlineExceeded)
	}
	var wrote atomic.Int64
	check("Update", func(ctx context.Context) error {
		return users.Update(ctx, []string{"k"}, func(context.Context) error { wrote.Add(1); return nil })
	})
	if wrote.Load() != 0 {
		t.Error("Update ran its write although the second delete was not recorded")
	}
	check("Delete", func(ctx context.Context) error { return users.Delete(ctx, "k") })
	check("Invalidate", func(ctx context.Context) error { return users.Invalidate(ctx, "k") })
	check("InvalidateAfter", func(ctx context.Context) error { return users.InvalidateAfter(ctx, time.Second, "k") })
	check("Pending", func(ctx context.Context) error { _, err := q.Pending(ctx); return err })
	check("DeadLetters", func(ctx context.Context) error { _, err := q.DeadLetters(ctx, 10); return err })
	check("DeadLetterCount", func(ctx context.Context) error { _, err := q.DeadLetterCount(ctx, "users"); return err })
}

// Close reports the calls it left running: with a call abandoned at its
// deadline on a frozen server, Close returns after the timeout with an
// error wrapping context.DeadlineExceeded; once the server is back, a
// second Close, and Close of a queue with nothing running, return nil.
func TestCloseReportsCallsStillRunning(t *testing.T) {
	srv, rdb := redistest.RealSingleDefault(t)
	const timeout = 300 * time.Millisecond
	q := newQueue(t, rdb, WithoutWorker(), WithTimeout(timeout))
	idle := newQueue(t, rdb, WithoutWorker())
	users := register(t, q, "users", newCache[string](t, rdb))
	if err := users.Delete(context.Background(), "warm"); err != nil {
		t.Fatal(err)
	}
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := users.InvalidateAfter(ctx, time.Second, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("InvalidateAfter against a frozen server: %v", err)
	}
	start := time.Now()
	err := q.Close()
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < timeout/2 {
		t.Fatalf("Close with a call still running: %v after %v, want context.DeadlineExceeded after about %v", err, took, timeout)
	}
	srv.Thaw()
	if err := q.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if err := idle.Close(); err != nil {
		t.Errorf("Close of a queue with nothing running: %v", err)
	}
}
