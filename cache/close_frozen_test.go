//go:build unix

package cache

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestCloseBoundedOnFrozenServer: Close "waits for its goroutines ... for at
// most the close timeout". A cache with a local tier (so an invalidation
// subscription on the client's shared pub/sub connection) on a client made
// with go-redis defaults, against a server frozen long enough for the
// subscription to be found down and dialled again, should return within its
// close timeout (plus a margin), whatever the pub/sub connection is doing.
func TestCloseBoundedOnFrozenServer(t *testing.T) {
	srv, rdb := redistest.RealSingleDefault(t)
	up := make(chan struct{}, 1)
	const closeTimeout = 200 * time.Millisecond
	c := newCache[string](t, rdb, WithLocal(1<<20), WithLocalAdmitAll(), WithCloseTimeout(closeTimeout),
		withHooks(&hooks{OnSubscribed: func() {
			select {
			case up <- struct{}{}:
			default:
			}
		}}))
	select {
	case <-up:
	case <-time.After(5 * time.Second):
		t.Fatal("the invalidation subscription never came up")
	}
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	// The health check finds the session dead (no PING reply within 1 s).
	for deadline := time.Now().Add(10 * time.Second); c.Stats().SubscriptionDowns == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the subscription was never found down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The next session dials after 50 ms and waits on the frozen server
	// (its dial's HELLO is read with the client's 3 s read timeout, which
	// no context cancels on this client) holding the connection's lock.
	// No hook marks that point; the window is seconds wide.
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	err := c.Close()
	if el := time.Since(start); el > closeTimeout+time.Second {
		t.Errorf("Close took %v (err %v), close timeout %v", el, err, closeTimeout)
	}
}
