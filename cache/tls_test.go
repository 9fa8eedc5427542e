package cache

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Over TLS (servers listening with TLS only and requiring a client
// certificate, redistest's TLS layouts), on a single node, a cluster and
// Sentinel: Get, Set, Delete and Clear with a local tier, the invalidation
// subscriber (another instance's Delete reaches the local tier as a
// message) and WithTracking (a foreign SET drops the local copy). On the
// cluster and under Sentinel the channel's master is then failed over, and
// the same holds on the promoted master, where the subscriber must be.
func TestTLS(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		srv := redistest.StartTLS(t)
		p := newTLSPair(t, srv.Client(), srv.Client(), "{t}")
		p.check(t)
	})
	t.Run("cluster", func(t *testing.T) {
		rc, rdb := redistest.StartClusterWithReplicasTLS(t)
		slot, err := rdb.ClusterKeySlot(context.Background(), "cacheguard:invalidate:"+prefixFor(t)).Result()
		if err != nil {
			t.Fatal(err)
		}
		owner, _ := slotOwner(t, rc.Masters, slot)
		p := newTLSPair(t, rdb, rc.Client(), tagOn(t, rdb, rc.Masters, owner))
		p.check(t)
		rc.Failover(owner)
		rc.WaitViewsAgree(owner)
		p.afterFailover(t, rc.Replicas[owner])
	})
	t.Run("sentinel", func(t *testing.T) {
		s, rdb := redistest.StartSentinelTLS(t)
		// b's client makes its TLS connections in a Dialer of its own (no
		// TLSConfig): every connection the library dials for it must go
		// through that Dialer.
		o := s.Options()
		o.Dialer, o.TLSConfig = (&tls.Dialer{Config: o.TLSConfig}).DialContext, nil
		rdbB := redis.NewFailoverClient(o)
		t.Cleanup(func() { rdbB.Close() })
		p := newTLSPair(t, rdb, rdbB, "{t}")
		p.check(t)
		p.afterFailover(t, s.Failover())
	})
}

// tagOn returns a hash tag whose slot masters[owner] serves.
func tagOn(t *testing.T, rdb redis.UniversalClient, masters []*redistest.Server, owner int) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		tag := fmt.Sprintf("{t%d}", i)
		slot, err := rdb.ClusterKeySlot(context.Background(), tag).Result()
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := slotOwner(t, masters, slot); o == owner {
			return tag
		}
	}
	t.Fatalf("no tag on master %d", owner)
	return ""
}

// tlsPair is a writer a and a reader b whose local entries live a minute,
// so that only a message can make b drop one within the test, and a
// tracking cache tr (a prefix of its own) on b's client.
type tlsPair struct {
	rdbA       redis.UniversalClient
	a, b       *Cache[string]
	tr         *tracked
	key, fence string // under one hash tag, on the channel's master
}

func newTLSPair(t *testing.T, rdbA, rdbB redis.UniversalClient, tag string) *tlsPair {
	t.Helper()
	p := &tlsPair{rdbA: rdbA, key: tag + "k", fence: tag + "fence"}
	p.a = newCache[string](t, rdbA)
	p.b = newCache[string](t, rdbB, WithLocal(1<<20), WithLocalAdmitAll(), WithLocalTTL(time.Minute), testHealth)
	awaitSubscribed(t, p.b)
	p.tr = newTracked(t, rdbB, WithPrefix(prefixFor(t)+"tracked:"), WithInvalidationHealthCheck(trackHealth, trackHealth))
	return p
}

// check runs the round: Set and Get, a Delete heard by b, a Clear, and a
// foreign SET that tracking reports.
func (p *tlsPair) check(t *testing.T) {
	t.Helper()
	p.deleteHeard(t)
	ctx := context.Background()
	p.hold(t, "before the clear")
	if err := p.a.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := func(context.Context, string) (string, error) { return "loaded after the clear", nil }
	for deadline := time.Now().Add(trackWait); ; time.Sleep(10 * time.Millisecond) {
		v, err := p.b.Get(ctx, p.key, fresh)
		if err == nil && v == "loaded after the clear" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b.Get after a.Clear = %q, %v", v, err)
		}
	}
	p.tr.hold(t, p.rdbA, p.key, p.fence, "v1")
	p.tr.foreignSet(t, p.rdbA, p.key, "v2")
}

// hold has a write v and waits until b serves it from its local tier.
func (p *tlsPair) hold(t *testing.T, v string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(trackWait); ; {
		err := p.a.Set(ctx, p.key, v)
		if err == nil {
			before := p.b.Stats().LocalHits
			got, gerr := p.b.Get(ctx, p.key, never(t))
			if gerr == nil && got == v && p.b.Stats().LocalHits > before {
				return
			}
			err = fmt.Errorf("Get = %q, %v", got, gerr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q never served from b's local tier: %v", v, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deleteHeard: a's Delete of a key b holds reaches b as a message, which
// drops b's copy (not a flush of the tier, nor its TTL). A message published
// while b's subscription moves after a failover is lost (b then clears its
// tier): the round is tried again until one is heard.
func (p *tlsPair) deleteHeard(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(trackWait)
	for round := 0; ; round++ {
		p.hold(t, fmt.Sprintf("v%d", round))
		received := p.b.Stats().InvalidationsReceived
		if err := p.a.Delete(ctx, p.key); err != nil {
			t.Fatal(err)
		}
		for wait := time.Now().Add(2 * time.Second); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
			if _, held := p.b.tier.Store().Get(p.key); !held && p.b.Stats().InvalidationsReceived > received {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's Delete never reached b's local tier (%d messages received)", p.b.Stats().InvalidationsReceived)
		}
	}
}

// afterFailover: once promoted is master, b's subscriber sits on it and the
// round passes again; tracking holds its bound across the failover.
func (p *tlsPair) afterFailover(t *testing.T, promoted *redistest.Server) {
	t.Helper()
	for deadline := time.Now().Add(trackWait); subscribers(t, promoted, p.b.bus.Channel()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("b's subscriber never moved to the promoted master %s", promoted.Addr)
		}
	}
	p.deleteHeard(t)
	p.tr.afterFailover(t, p.rdbA, p.key, p.fence, promoted)
}
