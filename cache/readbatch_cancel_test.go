package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Two Gets whose plain GETs hang (a stalled connection) leave when their
// contexts are cancelled without a deadline (a request whose client went
// away), on a client with ContextTimeoutEnabled as on one without: each
// returns when cancelled, and a Get of another key of that node does not
// queue behind their reads. go-redis turns only a deadline into a socket
// deadline, so a read sent on the caller's goroutine would hold the caller,
// and its place, until the client's own timeouts.
func TestCancelledReadsGiveBackTheirPlace(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	for _, cte := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", cte), func(t *testing.T) {
			o := srv.Options()
			o.ContextTimeoutEnabled = cte
			rdb := redis.NewClient(o)
			t.Cleanup(func() { _ = rdb.Close() })
			c := newCache[string](t, rdb)
			keys, h := holdFirstReads(t, c, rdb)
			errs := make(chan error, transport.ReadsInFlight)
			for _, k := range keys[:transport.ReadsInFlight] {
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					_, err := c.Get(ctx, k, noLoad)
					errs <- err
				}()
				recvOr(t, h.entered, "a held read")
				cancel()
				if err := recvOr(t, errs, "a cancelled Get"); !errors.Is(err, context.Canceled) {
					t.Errorf("Get whose read hangs, cancelled: %v, want context.Canceled", err)
				}
			}
			getWarm(t, c, keys[transport.ReadsInFlight])
			h.releaseAll()
			waitFor(t, func() bool { return c.redis.Wait(0) })
		})
	}
}
