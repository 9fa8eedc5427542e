package lock

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
)

func leaseTests(t *testing.T, rdb redis.UniversalClient) {
	t.Run("paused holder loses the lock", func(t *testing.T) { testPausedHolder(t, rdb) })
	t.Run("watchdog keeps the lock", func(t *testing.T) { testWatchdogKeeps(t, rdb) })
	t.Run("deleted key is noticed", func(t *testing.T) { testDeletedKey(t, rdb) })
	t.Run("taken key is noticed", func(t *testing.T) { testTakenKey(t, rdb) })
	t.Run("killed holder frees within a lease", func(t *testing.T) { testKilledHolder(t, rdb) })
	t.Run("renewals after SCRIPT FLUSH", func(t *testing.T) { testRenewAfterScriptFlush(t, rdb) })
}

// testRenewAfterScriptFlush: a batch of renewals (mutexes and a read lock,
// pipelined) lands on a server that lost its script cache (SCRIPT FLUSH, as
// a restart or a new cluster node): each lock gets the longer lease asked.
func testRenewAfterScriptFlush(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	const lease = 30 * time.Second // no renewal of the watchdog's own falls due meanwhile
	c := newClient(t, rdb, WithLease(lease))
	var batch []renewReq
	for _, name := range []string{"flushed-a", "flushed-b", "flushed-c"} {
		h, err := c.Mutex(name).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Unlock(ctx)
		batch = append(batch, renewReq{h: h.h, lease: 3 * lease})
	}
	r, err := c.RWMutex("flushed-rw").RLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unlock(ctx)
	batch = append(batch, renewReq{h: r.h, lease: 3 * lease})
	redistest.EachMaster(t, rdb, func(ctx context.Context, c *redis.Client) error { return c.ScriptFlush(ctx).Err() })
	sent := time.Now()
	for i, res := range c.renewBatch(ctx, batch) {
		if res.err != nil {
			t.Fatalf("renewal %d after SCRIPT FLUSH: %v", i, res.err)
		}
		// Longer than the lease taken: the renewal ran.
		if left := res.validUntil.Sub(sent); left < 2*lease {
			t.Fatalf("renewal %d after SCRIPT FLUSH: valid for %v; want about %v", i, left, 3*lease)
		}
	}
}

// testPausedHolder: a holder with a fixed lease stops (as if paused by GC or
// a stalled VM) past its lease. Its context is cancelled, a successor gets
// the lock with a higher token, the paused holder's write carrying its stale
// token is refused by the resource, and its late Unlock does not release the
// successor's lock.
func testPausedHolder(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	rdb.Del(ctx, resourceKeys...)
	a, b := newClient(t, rdb), newClient(t, rdb)
	stale, err := a.Mutex("paused", WithLease(100*time.Millisecond), WithoutWatchdog()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The pause: the holder does nothing until its lock is gone.
	waitDone(t, stale.Context(), 10*time.Second, "lost-lease signal")
	cause := context.Cause(stale.Context())
	if !errors.Is(cause, ErrLost) || !errors.Is(stale.Err(), ErrLost) {
		t.Fatalf("cause %v, Err %v: want ErrLost", cause, stale.Err())
	}
	t.Logf("cause: %v", cause)

	succ, err := b.Mutex("paused").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer succ.Unlock(ctx)
	if succ.Token() <= stale.Token() {
		t.Fatalf("successor token %d <= stale %d", succ.Token(), stale.Token())
	}
	if ok, err := writeFenced(ctx, rdb, succ.Token(), "successor"); err != nil || !ok {
		t.Fatalf("successor's write refused: %v", err)
	}
	if ok, err := writeFenced(ctx, rdb, stale.Token(), "stale"); err != nil || ok {
		t.Fatalf("stale write accepted (%v)", err)
	}
	if v, _ := rdb.HGet(ctx, resourceKeys[0], "value").Result(); v != "successor" {
		t.Fatalf("resource holds %q", v)
	}
	// Unlock by a holder that is no longer the owner releases nothing.
	if err := stale.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale unlock: %v, want ErrNotHeld", err)
	}
	if err := stale.Extend(ctx, time.Minute); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("stale extend: %v", err)
	}
	if _, err := succ.TTL(ctx); err != nil {
		t.Fatalf("successor lost its lock to a stale unlock: %v", err)
	}
	hx, err := a.Mutex("paused").TryLock(ctx)
	mustNotObtain(t, hx, err)
}

// testWatchdogKeeps: with a 1s lease and work that lasts 15 renewals (5
// leases), the lock is never lost and never free. A renewal that fails on
// the way (a call the machine's load made outlast its bound) is retried
// before the lease ends, which is the watchdog's promise: it may fail,
// the hold must not.
func testWatchdogKeeps(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	const lease = time.Second
	c, other := newClient(t, rdb, WithLease(lease)), newClient(t, rdb)
	renewed := make(chan error, 64)
	c.wd.hookRenewed = func(_ string, err error) { renewed <- err }
	h, err := c.Mutex("dog").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < 15; {
		select {
		case err := <-renewed:
			if errors.Is(err, ErrLost) {
				t.Fatalf("renewal %d: %v", i, err)
			}
			if err != nil {
				t.Logf("renewal %d failed, to be retried: %v", i, err)
			} else {
				i++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("renewal %d never came (hold: %v)", i, h.Err())
		}
		if h.Err() != nil {
			t.Fatalf("lost after %d renewals: %v", i, h.Err())
		}
		hx, err := other.Mutex("dog").TryLock(ctx)
		mustNotObtain(t, hx, err)
	}
	if el := time.Since(start); el < 4*lease {
		t.Fatalf("15 renewals took %v: not paced at lease/3", el)
	}
	ttl, err := h.TTL(ctx)
	if err != nil || ttl < lease/2 {
		t.Fatalf("ttl %v (%v) after 5 leases", ttl, err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Unlock stops the renewals.
	c.wd.mu.Lock()
	queued := len(c.wd.queue)
	c.wd.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d holds still scheduled after unlock", queued)
	}
}

// testDeletedKey: the key disappears under a watchdog-held lock; the next
// renewal notices and cancels the handle's context saying why.
func testDeletedKey(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb, WithLease(150*time.Millisecond))
	h, err := c.Mutex("deleted").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, "cacheguard:lock:{deleted}")
	waitDone(t, h.Context(), 10*time.Second, "lost signal")
	if err := context.Cause(h.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("cause %v", err)
	}
	if err := h.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock: %v", err)
	}
}

func testTakenKey(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb, WithLease(150*time.Millisecond))
	h, err := c.Mutex("taken").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	setMutex(ctx, rdb, "cacheguard:lock:{taken}", wire.FencedLock{Token: h.Token(), Holds: 1, Owner: "intruder"})
	waitDone(t, h.Context(), 10*time.Second, "lost signal")
	if err := context.Cause(h.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("cause %v", err)
	}
	if err := h.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock: %v", err)
	}
	if l, _ := mutexIn(ctx, rdb, "cacheguard:lock:{taken}"); l.Owner != "intruder" || l.Holds != 1 {
		t.Fatalf("lock %+v: unlock released someone else's lock", l)
	}
}

const (
	// killLease is the lease of the killed holders: renewed every second,
	// it outlasts the pauses of a loaded machine (at 600 ms, two busy loops
	// beside the tests made a live child lose its lease).
	killLease  = 3 * time.Second
	envKill    = "LOCK_TEST_KILL"
	readyKey   = "test:{killed}:ready"
	renewedKey = "test:{killed}:renewed"
)

// testKilledHolder kills (SIGKILL) a process that holds a watchdog lock:
// with nobody renewing it, the lock is free again within one lease.
func testKilledHolder(t *testing.T, rdb redis.UniversalClient) {
	{
		ctx := testCtx(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestTopologies$", "-test.count=1")
		cmd.Env = append(os.Environ(), redistest.ChildEnv+"=0", envRole+"="+roleKilled,
			envAddrs+"="+redistest.Spec(rdb))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("child output:\n%s", out.String())
			}
		}()
		// The child says when it holds the lock.
		v, err := rdb.BLPop(ctx, 20*time.Second, readyKey).Result()
		if err != nil {
			t.Fatalf("child never took the lock: %v", err)
		}
		childToken, _ := strconv.ParseInt(v[1], 10, 64)
		c := newClient(t, rdb)
		defer rdb.Del(ctx, readyKey, renewedKey)
		// Wait until the child's watchdog has renewed the lock once, so it
		// is the kill (not a missing watchdog) that stops the renewals.
		if _, err := rdb.BLPop(ctx, 20*time.Second, renewedKey).Result(); err != nil {
			t.Fatalf("child never renewed: %v", err)
		}
		hx, err := c.Mutex("killed").TryLock(ctx)
		mustNotObtain(t, hx, err)
		cmd.Process.Kill()
		killed := time.Now()
		pttl, err := rdb.PTTL(ctx, "cacheguard:lock:{killed}").Result()
		if err != nil || pttl <= 0 || pttl > killLease {
			t.Fatalf("after the kill the lock expires in %v (%v), want within %v", pttl, err, killLease)
		}
		h, err := c.Mutex("killed").Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Unlock(ctx)
		// Free within one lease: the PTTL above; how soon the waiter
		// noticed depends on the machine's load.
		t.Logf("lock free %v after the kill (lease %v)", time.Since(killed), killLease)
		if h.Token() <= childToken {
			t.Fatalf("token %d after the child's %d", h.Token(), childToken)
		}
	}
}

func killedChild(t *testing.T) {
	rdb := clientFromEnv(t)
	c := newClient(t, rdb, WithLease(killLease))
	ctx := context.Background()
	c.wd.hookRenewed = func(_ string, err error) {
		if err == nil {
			rdb.RPush(ctx, renewedKey, 1)
		}
	}
	h, err := c.Mutex("killed").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb.RPush(ctx, readyKey, h.Token())
	// Work "forever": the parent kills this process. The bound only
	// guards against an orphan.
	select {
	case <-h.Context().Done():
		t.Fatalf("child lost its lock: %v", context.Cause(h.Context()))
	case <-time.After(30 * time.Second):
	}
}

// TestRenewalFailureLosesLock: Redis goes away under a watchdog-held lock.
// The renewals fail, and the handle is told within a lease.
func TestRenewalFailureLosesLock(t *testing.T) {
	s, rdb := redistest.RealSingle(t)
	ctx := testCtx(t)
	const lease = 300 * time.Millisecond
	c := newClient(t, rdb, WithLease(lease))
	failed := make(chan error, 64)
	c.wd.hookRenewed = func(_ string, err error) {
		if err != nil {
			failed <- err
		}
	}
	h, err := c.Mutex("vanishing").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Kill()
	killed := time.Now()
	waitDone(t, h.Context(), 10*time.Second, "lost signal")
	// The signal comes at the local deadline: at most a lease after the
	// last renewal, which preceded the kill (plus timer slack).
	if took := time.Since(killed); took > lease+250*time.Millisecond {
		t.Fatalf("told %v after the kill, lease %v", took, lease)
	}
	cause := context.Cause(h.Context())
	if !errors.Is(cause, ErrLost) {
		t.Fatalf("cause %v", cause)
	}
	select {
	case err := <-failed:
		t.Logf("renewal error: %v; cause: %v", err, cause)
	case <-time.After(10 * time.Second):
		t.Fatal("lost without a failed renewal")
	}
}
