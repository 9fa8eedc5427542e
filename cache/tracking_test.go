package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// trackWait bounds how long a test waits for an event that tracking must
// bring: far above the bound H, so a slow machine does not fail a test, and
// an event that never comes (tracking broken) does.
const trackWait = 20 * time.Second

// tracked is a cache with WithTracking and a local tier whose entries stay
// fresh for a minute: only tracking (or a message of cacheguard's own) can
// make it drop one within a test.
type tracked struct {
	*Cache[string]
	rows sync.Map // key -> string: the source of truth
	mu   sync.Mutex
	seen []string      // keys of the tracking invalidations applied, "" for a flush
	ping chan struct{} // a tracking invalidation was applied
	ups  chan bool     // tracking came up (true) or went down (false)
	down func()        // called (once) in the Down event, when set
	up   func()        // called (once) in the Up event, when set
}

func newTracked(t *testing.T, rdb redis.UniversalClient, opts ...Option) *tracked {
	t.Helper()
	redistest.NeedServer(t) // miniredis has no CLIENT TRACKING
	tc := &tracked{ping: make(chan struct{}, 1), ups: make(chan bool, 16)}
	h := &hooks{
		OnTrack: func(keys []string) {
			tc.mu.Lock()
			if keys == nil {
				tc.seen = append(tc.seen, "")
			}
			tc.seen = append(tc.seen, keys...)
			tc.mu.Unlock()
			select {
			case tc.ping <- struct{}{}:
			default:
			}
		},
		OnTracking: func(up bool) {
			tc.mu.Lock()
			f := &tc.down
			if up {
				f = &tc.up
			}
			call := *f
			*f = nil
			tc.mu.Unlock()
			if call != nil {
				call()
			}
			tc.ups <- up
		},
	}
	tc.Cache = newCache[string](t, rdb, append([]Option{withHooks(h), WithLocal(1 << 20), WithLocalAdmitAll(),
		WithLocalTTL(time.Minute), WithTracking()}, opts...)...)
	awaitSubscribed(t, tc.Cache)
	tc.awaitUp(t)
	return tc
}

// awaitUp waits until tracking is up on every master.
func (tc *tracked) awaitUp(t *testing.T) { t.Helper(); tc.await(t, true) }

// awaitDown waits until tracking goes down.
func (tc *tracked) awaitDown(t *testing.T) { t.Helper(); tc.await(t, false) }

func (tc *tracked) await(t *testing.T, want bool) {
	t.Helper()
	deadline := time.After(trackWait)
	for {
		select {
		case up := <-tc.ups:
			if up == want {
				return
			}
		case <-deadline:
			t.Fatalf("tracking never went up=%v", want)
		}
	}
}

// awaitTracked waits until a tracking invalidation of key ("" for a flush)
// has been applied, and forgets what was seen up to it.
func (tc *tracked) awaitTracked(t *testing.T, key string) {
	t.Helper()
	deadline := time.After(trackWait)
	for {
		tc.mu.Lock()
		i := slices.Index(tc.seen, key)
		if i >= 0 {
			tc.seen = tc.seen[i+1:]
		}
		tc.mu.Unlock()
		if i >= 0 {
			return
		}
		select {
		case <-tc.ping:
		case <-deadline:
			t.Fatalf("no tracking invalidation of %q", key)
		}
	}
}

func (tc *tracked) load(_ context.Context, key string) (string, error) {
	if v, ok := tc.rows.Load(key); ok {
		return v.(string), nil
	}
	return "", ErrNotFound
}

// get returns key's value through the cache.
func (tc *tracked) get(t *testing.T, key string) string {
	t.Helper()
	v, err := tc.Get(context.Background(), key, tc.load)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hold puts key (whose row is v) in the local tier: it reads until a read
// is answered from memory. Then it fences: a change to fence (a key of the
// same node), made by plain, is seen applied, so that every tracking
// invalidation of key's fill has been too.
func (tc *tracked) hold(t *testing.T, plain redis.UniversalClient, key, fence, v string) {
	t.Helper()
	tc.rows.Store(key, v)
	if err := tc.Delete(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(trackWait)
	for {
		before := tc.Stats().LocalHits
		if got := tc.get(t, key); got != v {
			t.Fatalf("Get(%q) = %q, want %q", key, got, v)
		}
		if tc.Stats().LocalHits > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q never served from the local tier", key)
		}
	}
	if err := plain.Set(context.Background(), tc.keys.Key(fence), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tc.awaitTracked(t, fence)
	// The fence's invalidation came after those of key's fill: a read now
	// admits for good.
	for tc.Stats().LocalHits == 0 || !tc.inLocal(key) {
		if time.Now().After(deadline) {
			t.Fatalf("%q not held in the local tier", key)
		}
		tc.get(t, key)
	}
}

// foreignSet has plain (not a Cache) write foreign bytes, as another service
// would, under key, whose row becomes row; once Redis's invalidation of it is
// applied, a Get must miss the local tier and load row.
func (tc *tracked) foreignSet(t *testing.T, plain redis.UniversalClient, key, row string) {
	t.Helper()
	tc.rows.Store(key, row)
	if err := plain.Set(context.Background(), tc.keys.Key(key), "written by someone else", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tc.awaitTracked(t, key)
	if got := tc.get(t, key); got != row {
		t.Fatalf("%s%s after a foreign SET: Get = %q, want %q (the local copy was served)", tc.cfg.prefix, key, got, row)
	}
}

func (tc *tracked) inLocal(key string) bool {
	_, ok := tc.tier.Store().Get(key)
	return ok
}

// A key held in B's local tier and changed by a plain go-redis client (not
// through a Cache, so no message of cacheguard's own) is not served from
// memory after Redis's invalidation of it arrived: the next Get reads Redis.
// The same for an expiry, on a single node and a cluster. Without tracking
// the tier serves the old value for its minute.
func TestTrackingDropsForeignWrites(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		b := newTracked(t, rdb)
		key, fence := "{t}k", "{t}fence" // one slot: one master, in order
		b.hold(t, rdb, key, fence, "v1")

		b.foreignSet(t, rdb, key, "v2")

		// An expiry.
		b.hold(t, rdb, key, fence, "v3")
		if err := rdb.PExpire(ctx, b.cfg.prefix+key, time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		b.awaitTracked(t, key) // the PEXPIRE itself
		b.awaitTracked(t, key) // the expiry
		if n, err := rdb.Exists(ctx, b.cfg.prefix+key).Result(); err != nil || n != 0 {
			t.Fatalf("the key has not expired (%d, %v)", n, err)
		}
		b.rows.Store(key, "v4")
		if got := b.get(t, key); got != "v4" {
			t.Fatalf("after an expiry, Get = %q, want v4", got)
		}
		if s := b.Stats(); s.TrackingInvalidations == 0 {
			t.Fatalf("TrackingInvalidations = 0: %+v", s)
		}
	})
}

// A FLUSHALL clears the local tier (Redis sends a nil invalidation).
func TestTrackingFlushClearsTier(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	b := newTracked(t, rdb)
	b.hold(t, rdb, "k", "fence", "v1")
	b.rows.Store("k", "v2")
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	b.awaitTracked(t, "")
	if b.inLocal("k") {
		t.Fatal("the local tier still holds k after a flush")
	}
	if got := b.get(t, "k"); got != "v2" {
		t.Fatalf("after FLUSHALL, Get = %q, want v2", got)
	}
	if s := b.Stats(); s.TrackingFlushes == 0 {
		t.Fatalf("TrackingFlushes = 0: %+v", s)
	}
}

// trackingClients returns the IDs of the connections of the node c talks
// to that track with a redirect to themselves (the Hub's armed subscribers).
func trackingClients(t *testing.T, c *redis.Client) []string {
	t.Helper()
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(list, "\n") {
		var id, redir string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(f, "redir="); ok {
				redir = v
			}
		}
		if id != "" && id == redir {
			ids = append(ids, id)
		}
	}
	return ids
}

// keyAddr returns the address of the master holding key.
func keyAddr(t *testing.T, rdb redis.UniversalClient, key string) string {
	t.Helper()
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		m, err := c.MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return m.Options().Addr
	case *redis.Client:
		if a := c.Options().Addr; a != "FailoverClient" {
			return a
		}
		// Under Sentinel: the master the client reaches (loopback only).
		port, err := c.ConfigGet(context.Background(), "port").Result()
		if err != nil {
			t.Fatal(err)
		}
		return "127.0.0.1:" + port["port"]
	}
	t.Fatalf("no address for a %T", rdb)
	return ""
}

// The tracking connection killed (CLIENT KILL: the redirect's target, and
// its tracking, gone): the tier stops serving, and a write made while no
// connection was armed (here, from inside the Down event, so before any new
// session) is not served once tracking is back: the tier was cleared.
func TestTrackingConnectionKilledClearsTier(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		b := newTracked(t, rdb)
		key, fence := "{t}k", "{t}fence"
		b.hold(t, rdb, key, fence, "v1")
		addr := keyAddr(t, rdb, b.cfg.prefix+key)
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		ids := trackingClients(t, node)
		if len(ids) == 0 {
			t.Fatalf("no tracking connection on %s", addr)
		}
		flushes := b.Stats().LocalFlushes
		var heldAtUp bool
		b.mu.Lock()
		b.down = func() {
			b.rows.Store(key, "v2")
			if err := rdb.Set(ctx, b.cfg.prefix+key, "changed in the gap", 0).Err(); err != nil {
				t.Error(err)
			}
		}
		// Checked in the event itself: a resubscription of the
		// invalidation channel, later, clears the tier too.
		b.up = func() { heldAtUp = b.inLocal(key) }
		b.mu.Unlock()
		for _, id := range ids {
			if err := node.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
				t.Fatal(err)
			}
		}
		b.awaitDown(t)
		b.awaitUp(t)
		if heldAtUp || b.inLocal(key) {
			t.Fatal("the local tier still holds the key after tracking came back")
		}
		if got := b.get(t, key); got != "v2" {
			t.Fatalf("after the gap, Get = %q, want v2", got)
		}
		s := b.Stats()
		if s.TrackingDowns == 0 || s.LocalFlushes == flushes {
			t.Fatalf("TrackingDowns %d, LocalFlushes %d (was %d)", s.TrackingDowns, s.LocalFlushes, flushes)
		}
	})
}

// WithTracking without a local tier, or on a Ring, is refused by New.
func TestTrackingOptionChecks(t *testing.T) {
	_, rdb := redistest.Single(t)
	if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithTracking()); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("WithTracking without a local tier: %v, want ErrInvalidOption", err)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": rdb.(*redis.Client).Options().Addr}})
	defer ring.Close()
	if _, err := New(ring, Values[string]{}, WithPrefix("opt:"), WithLocal(1<<20), WithLocalAdmitAll(), WithTracking()); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("WithTracking on a Ring: %v, want ErrInvalidOption", err)
	}
}

// trackHealth is the health check of the failover tests: H = 400 ms.
const trackHealth = 200 * time.Millisecond

// awaitFresh reads key until it returns want, failing if a read that began
// more than H after written returns anything else: the bound of the package
// comment, measured on this process's clock.
func (tc *tracked) awaitFresh(t *testing.T, key, want string, written time.Time) {
	t.Helper()
	bound := written.Add(tc.cfg.local.healthInterval + tc.cfg.local.healthTimeout)
	deadline := written.Add(trackWait)
	for {
		start := time.Now()
		v, err := tc.Get(context.Background(), key, tc.load)
		if err == nil && v == want {
			return
		}
		if start.After(bound) {
			t.Fatalf("Get(%q) begun %v after the write = %q, %v; want %q within %v", key, start.Sub(written), v, err, want, bound.Sub(written))
		}
		if start.After(deadline) {
			t.Fatalf("Get(%q) never returned %q", key, want)
		}
	}
}

// afterFailover checks B once promoted is master in place of the node that
// held key: a plain client's write made at once is not served past the
// bound, and once tracking is armed on promoted, a write there arrives as an
// invalidation and is not served either.
func (tc *tracked) afterFailover(t *testing.T, plain redis.UniversalClient, key, fence string, promoted *redistest.Server) {
	t.Helper()
	ctx := context.Background()
	tc.rows.Store(key, "v2")
	written := time.Now()
	if err := plain.Set(ctx, tc.cfg.prefix+key, "written after the failover", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tc.awaitFresh(t, key, "v2", written)

	node := promoted.Client()
	for deadline := time.Now().Add(trackWait); len(trackingClients(t, node)) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no tracking connection on the promoted master %s", promoted.Addr)
		}
		tc.awaitUp(t)
	}
	tc.hold(t, plain, key, fence, "v3")
	tc.foreignSet(t, plain, key, "v4")
}

// A planned failover on a cluster (CLUSTER FAILOVER: the replica of the
// key's master promoted).
func TestTrackingBoundAcrossClusterFailover(t *testing.T) {
	rc, rdb := redistest.StartClusterWithReplicas(t)
	b := newTracked(t, rdb, WithInvalidationHealthCheck(trackHealth, trackHealth))
	key, fence := "{t}k", "{t}fence"
	slot, err := rdb.ClusterKeySlot(context.Background(), b.cfg.prefix+key).Result()
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := slotOwner(t, rc.Masters, slot)
	b.hold(t, rdb, key, fence, "v1")
	rc.Failover(owner)
	b.afterFailover(t, rdb, key, fence, rc.Replicas[owner])
}

// A planned Sentinel failover (SENTINEL FAILOVER), after which the demoted
// master goes on answering as one for seconds.
func TestTrackingBoundAcrossSentinelFailover(t *testing.T) {
	s, rdb := redistest.StartSentinel(t)
	b := newTracked(t, rdb, WithInvalidationHealthCheck(trackHealth, trackHealth))
	b.hold(t, rdb, "k", "fence", "v1")
	promoted := s.Failover()
	b.afterFailover(t, rdb, "k", "fence", promoted)
}

// A cache without WithTracking arms nothing: no connection of the server
// tracks, and the client's shared pub/sub connection is its only one.
func TestNoTrackingWithoutOption(t *testing.T) {
	srv, rdb := redistest.RealSingle(t)
	c := localCache(t, rdb)
	if ids := trackingClients(t, srv.Client()); len(ids) != 0 {
		t.Fatalf("tracking connections %v without WithTracking", ids)
	}
	if n := c.hub.Conns(); n != 1 {
		t.Fatalf("%d pub/sub connections, want 1", n)
	}
	if s := c.Stats(); s.TrackingDowns != 0 || s.TrackingInvalidations != 0 {
		t.Fatalf("tracking counters moved: %+v", s)
	}
}

// Tracking caches added one after another on one client, with prefixes that
// overlap (Redis refuses overlapping prefixes on one connection) and one
// that does not (the armed connection dials again to add it), all come up,
// and each hears a plain client's write under its prefix.
func TestTrackingPrefixesOfOneClient(t *testing.T) {
	_, rdb := redistest.RealSingle(t)
	base := prefixFor(t)
	var caches []*tracked
	for _, p := range []string{base + "a:", base + "a:b:", base + "c:"} {
		caches = append(caches, newTracked(t, rdb, WithPrefix(p)))
	}
	for _, tc := range caches {
		tc.hold(t, rdb, "k", "fence", "v1")
		tc.foreignSet(t, rdb, "k", "v2")
	}
	if n := caches[0].hub.Conns(); n != 1 {
		t.Fatalf("%d pub/sub connections, want 1", n)
	}
}

// A Redis user refused CLIENT TRACKING: the tracking cache reports it and
// serves nothing from memory, and the shared connection goes on carrying
// the other subscriptions (a cache without tracking on the same client
// comes up).
func TestTrackingRefusedLeavesConnectionWorking(t *testing.T) {
	srv, admin := redistest.RealSingle(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "notrack", "on", ">pw", "~*", "&*", "+@all", "-client|tracking").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "notrack", Password: "pw"})
	defer rdb.Close()
	refused := make(chan error, 16)
	onErr := func(err error) {
		if strings.Contains(err.Error(), "CLIENT TRACKING") {
			select {
			case refused <- err:
			default:
			}
		}
	}
	tc := newCache[string](t, rdb, WithLocal(1<<20), WithLocalAdmitAll(), WithTracking(), WithErrorHandler(onErr))
	select {
	case <-refused:
	case <-time.After(trackWait):
		t.Fatal("the refused arming was not reported")
	}
	other := newCache[string](t, rdb, WithPrefix(prefixFor(t)+"other:"), WithLocal(1<<20), WithLocalAdmitAll())
	awaitSubscribed(t, other)
	awaitSubscribed(t, tc)
	load := func(context.Context, string) (string, error) { return "v", nil }
	for range 3 {
		if _, err := tc.Get(ctx, "k", load); err != nil {
			t.Fatal(err)
		}
	}
	if s := tc.Stats(); s.LocalHits != 0 {
		t.Fatalf("%d local hits without tracking armed", s.LocalHits)
	}
}

// After a Clear the cache's keys carry its generation; Redis's invalidations
// of them still reach the local tier under the user's key.
func TestTrackingAfterClear(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := newTracked(t, rdb)
		if err := b.Clear(context.Background()); err != nil {
			t.Fatal(err)
		}
		key, fence := "{t}k", "{t}fence"
		b.hold(t, rdb, key, fence, "v1")
		b.foreignSet(t, rdb, key, "v2")
	})
}
