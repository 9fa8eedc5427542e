//go:build unix

package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestBoundedOnFrozenServer: on a client made with go-redis defaults
// (ContextTimeoutEnabled off, so go-redis itself ignores deadlines while it
// reads a reply), every call against a frozen server returns soon after its
// context's deadline, or after WithTimeout, with an error errors.Is can
// match.
func TestBoundedOnFrozenServer(t *testing.T) {
	s, _ := redistestSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	c := newClient(t, rdb)
	held, err := c.Mutex("frozen-held").Lock(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	f := freezer(t, s.Addr)
	f.freeze()
	defer f.resume()

	const budget, margin = 300 * time.Millisecond, time.Second
	check := func(what string, want error, call func(ctx context.Context) error) {
		t.Helper()
		redistest.CheckBounded(t, what+" against a frozen server", budget, margin, call, want)
	}
	check("TryLock", context.DeadlineExceeded, func(ctx context.Context) error {
		_, err := c.Mutex("frozen-try").TryLock(ctx)
		return err
	})
	check("Lock", context.DeadlineExceeded, func(ctx context.Context) error {
		_, err := c.Mutex("frozen-lock").Lock(ctx)
		return err
	})
	check("Unlock", context.DeadlineExceeded, held.Unlock)
	bounded := newClient(t, rdb, WithTimeout(budget))
	check("TryLock without a deadline", ErrRedis, func(context.Context) error {
		_, err := bounded.Mutex("frozen-timeout").TryLock(context.Background())
		return err
	})
}

// testUnlockCancelled: Unlock with a context already cancelled still
// releases the lock, so another client takes it at once.
func testUnlockCancelled(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	a, b := newClient(t, rdb), newClient(t, rdb)
	h, err := a.Mutex("unlock-cancelled").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := h.Unlock(cctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	h2, err := b.Mutex("unlock-cancelled").TryLock(ctx)
	if err != nil {
		t.Fatalf("the lock is stranded after Unlock with a cancelled context: %v", err)
	}
	h2.Unlock(ctx)
}

// TestClosedClientHandle: after Close, Extend touches nothing and says
// ErrClosed; Unlock says ErrClosed too (and still frees the lock).
func TestClosedClientHandle(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	c, err := New(rdb, WithLease(time.Second), WithoutWatchdog())
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Mutex("closed-handle").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := h.Extend(ctx, time.Hour); !errors.Is(err, ErrClosed) {
		t.Errorf("Extend after Close: %v, want ErrClosed", err)
	}
	if pttl := rdb.PTTL(ctx, "cacheguard:lock:{closed-handle}").Val(); pttl > time.Second {
		t.Errorf("Extend after Close moved the lease to %v", pttl)
	}
	if err := h.Unlock(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Unlock after Close: %v, want ErrClosed", err)
	}
	if heldIn(ctx, rdb, "cacheguard:lock:{closed-handle}") {
		t.Errorf("Unlock after Close left the lock held")
	}
}

// TestInvalidName: names that would break the key's hash tag are refused
// with ErrInvalidArgument; a name carrying its own hash tag is used as is, so a
// lock can live in the slot of the data it guards.
func TestInvalidName(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	c := newClient(t, rdb)
	for _, name := range []string{"", "a}b", "{}x", "x{", "a{}"} {
		if _, err := c.Mutex(name).TryLock(ctx); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Mutex(%q): %v, want ErrInvalidArgument", name, err)
		}
	}
	h, err := c.Mutex("orders:{42}:lock").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock(ctx)
	if !heldIn(ctx, rdb, "cacheguard:lock:orders:{42}:lock") {
		t.Fatal("a name with its own hash tag is not used as the key")
	}
}

// Close reports the calls it left running: with a call abandoned at its
// deadline on a frozen server, Close returns after closeWait with an error
// wrapping context.DeadlineExceeded; once the server is back, a second
// Close, and Close of a client with nothing running, return nil.
func TestCloseReportsCallsStillRunning(t *testing.T) {
	s, _ := redistestSingle(t)
	// Deadlines not applied by go-redis, and a read that outlasts closeWait.
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 3 * closeWait})
	defer rdb.Close()
	c, err := New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	idle := newClient(t, rdb)
	if _, err := c.Mutex("close-warm").TryLock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	f := abandonOnFrozen(t, c, s.Addr, "close-frozen")
	start := time.Now()
	err = c.Close()
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < closeWait-time.Second {
		t.Fatalf("Close with a call still running: %v after %v, want context.DeadlineExceeded after %v", err, took, closeWait)
	}
	f.resume()
	if err := c.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if err := idle.Close(); err != nil {
		t.Errorf("Close of a client with nothing running: %v", err)
	}
}
