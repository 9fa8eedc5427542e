package lock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// goroutines counts the goroutines whose stack mentions fn.
func goroutines(fn string) int {
	return len(stacksOf(fn))
}

// noGoroutines fails unless the goroutines mentioning fn are gone. A
// goroutine that has signalled its WaitGroup still shows in stacks for the
// instant it takes to return, so this looks a few times, as goleak does.
func noGoroutines(t testing.TB, fn string) {
	t.Helper()
	var gs []string
	for i := 0; i < 100; i++ {
		if gs = stacksOf(fn); len(gs) == 0 {
			return
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("goroutines of %s left:\n%s", fn, strings.Join(gs, "\n\n"))
}

func stacksOf(fn string) []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			out = append(out, g)
		}
	}
	return out
}

// TestOneWatchdogForManyLocks holds 40 locks and 10 read locks (taken
// together, so their renewals fall due together and go out in pipelined
// batches) through two leases with a single scheduling goroutine.
func TestOneWatchdogForManyLocks(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	// Renewals go out a third of a lease after the last; the two thirds
	// left must cover a batch of 50 on a loaded machine, or the locks are
	// rightly lost.
	const lease = 2 * time.Second
	c, other := newClient(t, rdb, WithLease(lease)), newClient(t, rdb)
	renewed := make(chan error, 1024)
	c.wd.hookRenewed = func(_ string, err error) { renewed <- err }
	var hs []*Handle
	for i := 0; i < 40; i++ {
		h, err := c.Mutex(fmt.Sprint("many", i)).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	var readers []*Handle
	for i := 0; i < 10; i++ {
		h, err := c.RWMutex(fmt.Sprint("manyrw", i)).RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, h)
	}
	if n := goroutines("(*watchdog).loop"); n != 1 {
		t.Fatalf("%d watchdog goroutines for 50 locks", n)
	}
	for i := 0; i < 50*6; i++ { // six renewals each: two leases
		select {
		case err := <-renewed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("renewal %d never came", i)
		}
	}
	for i, h := range hs {
		if h.Err() != nil {
			t.Fatalf("lock %d lost: %v", i, h.Err())
		}
		hx, err := other.Mutex(h.Name()).TryLock(ctx)
		mustNotObtain(t, hx, err)
		h.Unlock(ctx)
	}
	for i, h := range readers {
		if h.Err() != nil {
			t.Fatalf("read lock %d lost: %v", i, h.Err())
		}
		hx, err := other.RWMutex(h.Name()).TryLock(ctx)
		mustNotObtain(t, hx, err)
		h.Unlock(ctx)
	}
	// Nothing held: the goroutine exits.
	c.wd.wg.Wait()
	noGoroutines(t, "(*watchdog).loop")
}

// testClose: Close cancels held handles (the lease will no longer be
// renewed), ends waiting Lock calls, refuses new ones, and leaves no
// goroutine of the package behind.
func testClose(t *testing.T, rdb redis.UniversalClient) {
	{
		{
			ctx := testCtx(t)
			c, err := New(rdb)
			if err != nil {
				t.Fatal(err)
			}
			hook := hookWaiting(c.engine)
			held, err := c.Mutex("closing").Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fixed, err := c.Mutex("closing2", WithLease(time.Hour), WithoutWatchdog()).Lock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				_, err := c.Mutex("closing").Lock(ctx)
				got <- err
			}()
			hook.next(t, "closing")
			if n := goroutines("pubsub.(*conn).run"); n != 1 {
				t.Fatalf("%d notification readers", n)
			}
			c.Close()
			if err := <-got; !errors.Is(err, ErrClosed) {
				t.Fatalf("waiting Lock after Close: %v", err)
			}
			for _, h := range []*Handle{held, fixed} {
				cause := context.Cause(h.Context())
				if !errors.Is(cause, ErrLost) || !errors.Is(cause, ErrClosed) {
					t.Fatalf("cause after Close: %v", cause)
				}
			}
			if _, err := c.Mutex("other").TryLock(ctx); !errors.Is(err, ErrClosed) {
				t.Fatalf("TryLock after Close: %v", err)
			}
			for _, fn := range []string{"lock.(*watchdog)", "lock.(*notifier)", "lock.(*engine)", "pubsub.(*conn)"} {
				noGoroutines(t, fn)
			}
			// The Redis client is the caller's: unlocking still frees the
			// lock, and says the client is closed.
			if err := held.Unlock(ctx); !errors.Is(err, ErrClosed) {
				t.Fatalf("Unlock after Close: %v", err)
			}
			if heldIn(ctx, rdb, "cacheguard:lock:{closing}") {
				t.Fatal("Unlock after Close left the lock held")
			}
			c.Close() // twice is fine
		}
	}
}
