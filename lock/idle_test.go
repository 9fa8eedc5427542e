//go:build unix

package lock

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// packageGoroutines returns the stacks of the goroutines running code of
// this package, by goroutine header, leaving out the tests' own goroutines.
func packageGoroutines() map[string]string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !(strings.Contains(g, "cacheguard/lock.") || strings.Contains(g, "cacheguard/internal/pubsub.")) || strings.Contains(g, "testing.tRunner") ||
			strings.Contains(g, "lock_test.") || strings.Contains(g, "lock.Test") {
			continue
		}
		id, _, _ := strings.Cut(g, " [")
		out[id] = g
	}
	return out
}

// newGoroutines returns the package goroutines that are not in before,
// looking again (up to within) until there are none.
func newGoroutines(before map[string]string, within time.Duration) []string {
	deadline := time.Now().Add(within)
	for {
		var left []string
		for id, g := range packageGoroutines() {
			if _, ok := before[id]; !ok {
				left = append(left, g)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIdleClientRunsNothing: a client that holds nothing and has no waiter
// runs no goroutine of its own and has no timer armed, so it costs no CPU:
// not when new, and not once the locks it held are released (the watchdog
// loop exits after its idle check, the subscriber after its linger). After
// Close no goroutine of it is left.
func TestIdleClientRunsNothing(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	before := packageGoroutines()
	c, err := New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	c.ntf.linger = 0
	if left := newGoroutines(before, 0); len(left) != 0 {
		t.Fatalf("a new client runs goroutines:\n%s", strings.Join(left, "\n\n"))
	}
	hook := hookWaiting(c.engine)
	h, err := c.Mutex("idle").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		h2, err := c.Mutex("idle").Lock(ctx)
		if err == nil {
			err = h2.Unlock(ctx)
		}
		got <- err
	}()
	hook.next(t, "idle") // a waiter: the subscriber runs
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// The watchdog looks at least once per idleCheck; the subscriber is
	// swept on its next look after the linger.
	if left := newGoroutines(before, 10*idleCheck); len(left) != 0 {
		t.Fatalf("goroutines of an idle client:\n%s", strings.Join(left, "\n\n"))
	}
	c.wd.mu.Lock()
	running, queued := c.wd.running, len(c.wd.queue)
	c.wd.mu.Unlock()
	if running || queued != 0 {
		t.Fatalf("idle watchdog: running %v, %d holds queued", running, queued)
	}
	c.Close()
	if left := newGoroutines(before, time.Second); len(left) != 0 {
		t.Fatalf("goroutines after Close:\n%s", strings.Join(left, "\n\n"))
	}
}

// TestCloseWaitsForAbandonedCalls: a call given up on at its deadline goes
// on inside go-redis (a client with default options reads until its
// ReadTimeout); Close waits for it, so that no goroutine of the client is
// left once Close returns.
func TestCloseWaitsForAbandonedCalls(t *testing.T) {
	s, _ := redistestSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 2 * time.Second, MaxRetries: -1})
	defer rdb.Close()
	before := packageGoroutines()
	c, err := New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	if err := acquireScript.Load(testCtx(t), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	abandonOnFrozen(t, c, s.Addr, "abandoned")
	if goroutines("call.handOff") == 0 {
		t.Fatal("no abandoned call running: the test proves nothing")
	}
	c.Close()
	// Only the instant a finished goroutine takes to return is allowed.
	if left := newGoroutines(before, 50*time.Millisecond); len(left) != 0 {
		t.Fatalf("Close returned while calls of the client still run:\n%s", strings.Join(left, "\n\n"))
	}
}
