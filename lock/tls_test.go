package lock

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Over TLS (servers that accept TLS only and require a client certificate),
// on a single node, a cluster and Sentinel: Lock and Unlock, and a waiter
// backing off for an hour woken by the release notification. Under
// Sentinel also with a client that makes its TLS connections in a Dialer of
// its own.
func TestTLS(t *testing.T) {
	woken := func(t *testing.T, rdb redis.UniversalClient) {
		holder := newClient(t, rdb, WithLease(time.Hour), WithoutWatchdog())
		c := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
		wokenByRelease(t, testCtx(t), holder, c, hookWaiting(c.engine), "sub", "over TLS")
	}
	t.Run("single", func(t *testing.T) { woken(t, redistest.StartTLS(t).Client()) })
	t.Run("cluster", func(t *testing.T) {
		_, rdb := redistest.StartClusterTLS(t)
		woken(t, rdb)
	})
	t.Run("sentinel", func(t *testing.T) {
		s, rdb := redistest.StartSentinelTLS(t)
		woken(t, rdb)
		o := s.Options()
		o.Dialer, o.TLSConfig = (&tls.Dialer{Config: o.TLSConfig}).DialContext, nil
		viaDialer := redis.NewFailoverClient(o)
		t.Cleanup(func() { viaDialer.Close() })
		t.Run("TLS in the Dialer", func(t *testing.T) { woken(t, viaDialer) })
	})
}
