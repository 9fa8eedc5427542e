package cache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/faultproxy"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestKeepAliveOnSilentConnection: on a client made with go-redis defaults
// (ContextTimeoutEnabled off, so a read waits its ReadTimeout of 3 s, longer
// than the lease), the connection an extension goes out on goes silent. The
// attempt is given up after its period and retried on another connection,
// so the lease never lapses under the live loader.
func TestKeepAliveOnSilentConnection(t *testing.T) {
	srv, _ := redistest.RealSingle(t)
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	viaProxy := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { viaProxy.Close() })
	direct := srv.Client()
	const lease = 1500 * time.Millisecond
	c := newCache[string](t, viaProxy, WithLease(lease))
	// After the first extension every connection open so far goes silent
	// (until the loader returns, so that the fill is not held up too);
	// connections dialled later work.
	var silenced atomic.Bool
	var links []*faultproxy.Link
	silent := make(chan struct{})
	c.hooks.onExtend = func(string, bool, error) {
		if silenced.CompareAndSwap(false, true) {
			links = p.Links()
			for _, l := range links {
				l.Blackhole(faultproxy.Both)
			}
			close(silent)
		}
	}
	key := prefixFor(t) + "k"
	lapsed := make(chan time.Duration, 1)
	v, err := c.Get(context.Background(), "k", func(ctx context.Context, _ string) (string, error) {
		<-silent
		start := time.Now()
		for time.Since(start) < 2*lease {
			if n, err := direct.Exists(ctx, key).Result(); err == nil && n == 0 {
				lapsed <- time.Since(start)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, l := range links {
			l.Heal()
		}
		return "v", nil
	})
	select {
	case d := <-lapsed:
		t.Fatalf("the lease lapsed %v after the extension's connection went silent", d)
	default:
	}
	if err != nil || v != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if st := c.Stats(); st.RejectedFills != 0 {
		t.Fatalf("fill rejected: %+v", st)
	}
}
