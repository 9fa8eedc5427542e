package redistest

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A TLS server answers a client with ClientTLS and nobody else: a plain
// client, and a TLS client without a certificate, are refused.
func TestTLSOnly(t *testing.T) {
	s := StartTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("PING over TLS: %v", err)
	}
	for name, o := range map[string]*redis.Options{
		"plain":          {Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second},
		"no client cert": {Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, TLSConfig: &tls.Config{RootCAs: ClientTLS(t).RootCAs}},
	} {
		c := redis.NewClient(o)
		if err := c.Ping(ctx).Err(); err == nil {
			t.Errorf("%s client: PING answered", name)
		}
		c.Close()
	}
}

// The TLS cluster with replicas fails over (nodes talk TLS on the bus and
// for replication), and the TLS Sentinels fail their master over.
func TestTLSFailovers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("cluster", func(t *testing.T) {
		rc, c := StartClusterWithReplicasTLS(t)
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		rc.Failover(0)
		rc.WaitViewsAgree(0)
		if err := c.(*redis.ClusterClient).ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		s, c := StartSentinelTLS(t)
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		promoted := s.Failover()
		if got, err := promoted.Client().Get(ctx, "k").Result(); err != nil || got != "v" {
			t.Fatalf("promoted master: %q, %v", got, err)
		}
	})
}
