package lock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// testSubscriptionLifecycle: a waiter subscribes to the release channel, is
// woken through it, and the idle channel is then dropped (on a cluster with
// its connection). A second round shows that subscribing again works.
func testSubscriptionLifecycle(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	holder := newClient(t, rdb, WithLease(time.Hour), WithoutWatchdog())
	c := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	c.ntf.linger = 0 // set before any reader starts
	hook := hookWaiting(c.engine)
	for round := 0; round < 2; round++ {
		wokenByRelease(t, ctx, holder, c, hook, "sub", fmt.Sprintf("round %d", round))
		// The waiter has left: sweeping drops the idle channel.
		c.ntf.sweep()
		c.ntf.mu.Lock()
		topics := len(c.ntf.topics)
		c.ntf.mu.Unlock()
		if topics != 0 {
			t.Fatalf("round %d: %d topics left after the sweep", round, topics)
		}
		if nconns := c.ntf.hub.Conns(); nconns != 0 {
			t.Fatalf("round %d: %d subscriber connections left", round, nconns)
		}
	}
}

// wokenByRelease: holder takes the Mutex name (with holderOpts), a Lock of
// c blocks on it (hook sees it wait, subscribed), and holder's Unlock wakes
// it: c must not back off for long (an hour in the tests), so only the
// release notification reaches it in time. It returns the fencing tokens of
// the holder and of the woken waiter.
func wokenByRelease(t *testing.T, ctx context.Context, holder, c *Client, hook *waitingHook, name, what string, holderOpts ...Option) (held, woken int64) {
	t.Helper()
	h, err := holder.Mutex(name, holderOpts...).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		h2, err := c.Mutex(name).Lock(ctx)
		if err == nil {
			woken = h2.Token()
			err = h2.Unlock(ctx)
		}
		got <- err
	}()
	hook.next(t, name)
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: waiter not woken by the release", what)
	}
	return h.Token(), woken
}

// testReleaseNamesOneClient: a Mutex release names one client of the wait
// list. Here the list names only a client (b) whose waiter has gone: b must
// pass the release on, or a's waiter (with an hour of backoff) would never
// hear of it.
func testReleaseNamesOneClient(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	const ch, list = "cacheguard:lock:{fwd}:released", "cacheguard:lock:{fwd}:waiters"
	holder := newClient(t, rdb, WithLease(time.Hour), WithoutWatchdog())
	a := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	b := newClient(t, rdb)
	// No wait-list refresh during the test: the list stays as set below.
	a.ntf.sweepIn, b.ntf.sweepIn = time.Hour, time.Hour
	hook := hookWaiting(a.engine)

	h, err := holder.Mutex("fwd").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// b is subscribed to the channel but has no waiter any more.
	w := b.ntf.join(ctx, ch, "", false)
	select {
	case <-w.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("b's subscription never confirmed")
	}
	b.ntf.leave(w, true)

	got := make(chan error, 1)
	go func() {
		h2, err := a.Mutex("fwd").Lock(ctx)
		if err == nil {
			err = h2.Unlock(ctx)
		}
		got <- err
	}()
	hook.next(t, "fwd")
	// The list now names b alone.
	if err := rdb.ZRem(ctx, list, a.ntf.self).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, list, redis.Z{Score: 1 << 50, Member: b.ntf.self}).Err(); err != nil {
		t.Fatal(err)
	}
	h.Unlock(ctx)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the release named a client without waiters and was lost")
	}
	rdb.Del(ctx, list)
}

// subscriberConns counts, on every master, the connections subscribed to
// any channel (CLIENT LIST: sub or ssub not 0).
func subscriberConns(t testing.TB, rdb redis.UniversalClient) map[string]int {
	t.Helper()
	if redistest.ServerPath() == "" {
		t.Skip("counting connections needs CLIENT LIST, which the miniredis fallback lacks")
	}
	out := map[string]int{}
	var mu sync.Mutex
	redistest.EachMaster(t, rdb, func(ctx context.Context, c *redis.Client) error {
		list, err := c.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		n := 0
		for _, line := range strings.Split(list, "\n") {
			if line != "" && (!strings.Contains(line, " sub=0 ") || !strings.Contains(line, " ssub=0 ")) {
				n++
			}
		}
		mu.Lock()
		out[c.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	return out
}

// testOneSubscriberPerNode: 1,000 waiters on 1,000 different locks use one
// subscriber connection per master, and none once they are gone and the
// client is closed.
func testOneSubscriberPerNode(t *testing.T, rdb redis.UniversalClient) {
	const locks = 1000
	ctx := testCtx(t)
	holder := newClient(t, rdb, WithLease(time.Minute), WithoutWatchdog())
	c, err := New(rdb, WithBackoff(time.Minute, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var blocked sync.Map
	ready := make(chan struct{})
	var nblocked int
	var bmu sync.Mutex
	c.hookWaiting = func(name string) {
		if _, dup := blocked.LoadOrStore(name, true); !dup {
			bmu.Lock()
			nblocked++
			if nblocked == locks {
				close(ready)
			}
			bmu.Unlock()
		}
	}
	before := subscriberConns(t, rdb)
	held := make([]*Handle, locks)
	for i := range held {
		if held[i], err = holder.Mutex(fmt.Sprintf("fanout-%d", i)).Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, locks)
	for i := 0; i < locks; i++ {
		go func() {
			h, err := c.Mutex(fmt.Sprintf("fanout-%d", i)).Lock(ctx)
			if err == nil {
				err = h.Unlock(ctx)
			}
			errs <- err
		}()
	}
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("the waiters never all blocked")
	}
	during := subscriberConns(t, rdb)
	for addr, n := range during {
		if extra := n - before[addr]; extra > 1 {
			t.Errorf("master %s: %d subscriber connections for %d waiters", addr, extra, locks)
		}
	}
	t.Logf("subscriber connections per master before %v, with %d waiters %v", before, locks, during)
	for _, h := range held {
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err) // else its waiter waits out the holder's lease
		}
	}
	for i := 0; i < locks; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	// The connections are closed by now; the server takes a moment to
	// see it.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		after, left := subscriberConns(t, rdb), false
		for addr, n := range after {
			if n > before[addr] {
				left = true
				if time.Now().After(deadline) {
					t.Errorf("master %s: %d subscriber connections left after Close", addr, n-before[addr])
				}
			}
		}
		if !left || time.Now().After(deadline) {
			break
		}
	}
}
