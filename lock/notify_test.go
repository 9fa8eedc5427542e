package lock

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testSubscriptionLifecycle: a waiter subscribes to the release channel, is
// woken through it, and the idle channel is then dropped (on a cluster with
// its connection). A second round shows that subscribing again works.
func testSubscriptionLifecycle(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	holder := newClient(t, rdb, WithLease(time.Hour))
	c := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	c.ntf.linger = 0 // set before any reader starts
	hook := hookWaiting(c.engine)
	for round := 0; round < 2; round++ {
		h, err := holder.Mutex("sub").Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			h2, err := c.Mutex("sub").Lock(ctx)
			if err == nil {
				err = h2.Unlock(ctx)
			}
			got <- err
		}()
		hook.next(t, "sub")
		h.Unlock(ctx)
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: waiter not woken", round)
		}
		// The waiter has left: sweeping drops the idle channel.
		c.ntf.mu.Lock()
		var conns []*subConn
		for _, sc := range c.ntf.conns {
			conns = append(conns, sc)
		}
		c.ntf.mu.Unlock()
		for _, sc := range conns {
			c.ntf.sweep(sc)
		}
		c.ntf.mu.Lock()
		topics, nconns := len(c.ntf.topics), len(c.ntf.conns)
		c.ntf.mu.Unlock()
		if topics != 0 {
			t.Fatalf("round %d: %d topics left after the sweep", round, topics)
		}
		if c.ntf.perChan && nconns != 0 {
			t.Fatalf("round %d: %d per-channel connections left", round, nconns)
		}
		for _, sc := range conns {
			sc.opMu.Lock()
			n, stopped := len(sc.subscribed), sc.stopped
			sc.opMu.Unlock()
			if n != 0 || (c.ntf.perChan && !stopped) {
				t.Fatalf("round %d: connection still subscribed to %d channels (stopped %v)", round, n, stopped)
			}
		}
	}
}

// testReleaseNamesOneClient: a Mutex release names one client of the wait
// list. Here the list names only a client (b) whose waiter has gone: b must
// pass the release on, or a's waiter (with an hour of backoff) would never
// hear of it.
func testReleaseNamesOneClient(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	const ch, list = "lock:{fwd}:released", "lock:{fwd}:waiters"
	holder := newClient(t, rdb, WithLease(time.Hour))
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
