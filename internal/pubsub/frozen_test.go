//go:build unix

package pubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// While a connection's next session dials a frozen server (on a client made
// with go-redis defaults, whose dial waits for its HELLO reply with the
// 3 s read timeout whatever the context says), Subscribe of a new channel
// on that connection must still return by its context's deadline: a lock
// waiter subscribes on its caller's context. So must Close of a handler.
func TestSubscribeBoundedWhileRedialingFrozenServer(t *testing.T) {
	srv, rdb := redistest.RealSingleDefault(t)
	h := pubsub.Acquire(rdb)
	defer h.Release(time.Time{})
	keep := newEvents()
	defer h.Subscribe(context.Background(), "keep", keep, pubsub.Options{}).Close()
	if !await(t, keep.up, "keep Up") {
		return
	}
	srv.Freeze()
	defer srv.Thaw()
	// The health check (1 s) finds the session dead.
	select {
	case <-keep.down:
	case <-time.After(10 * time.Second):
		t.Fatal("no Down on a frozen server")
	}
	// The next session dials after 50 ms and waits for the frozen server
	// holding the connection's lock; no hook marks that point, and the
	// window is seconds wide.
	time.Sleep(300 * time.Millisecond)
	const budget, margin = 300 * time.Millisecond, 700 * time.Millisecond
	redistest.CheckBounded(t, "Subscribe while the connection redials a frozen server", budget, margin, func(ctx context.Context) error {
		h.Subscribe(ctx, "new", newEvents(), pubsub.Options{}).Close()
		return nil
	})
}
