package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/faultproxy"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// cancelAfterWrite is a client hook that cancels a write's context as soon as
// its command (or pipeline) has returned: the writer's caller gave up right
// after Redis applied the write.
type cancelAfterWrite struct{}

type cancelKey struct{}

func withCancelAfterWrite(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	return context.WithValue(ctx, cancelKey{}, cancel)
}

func cancelIn(ctx context.Context) {
	if f, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		f()
	}
}

func (cancelAfterWrite) DialHook(next redis.DialHook) redis.DialHook { return next }
func (cancelAfterWrite) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if isSetWrite(cmd, err) || cmd.Name() == "unlink" {
			cancelIn(ctx)
		}
		return err
	}
}
func (cancelAfterWrite) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Name() == "unlink" {
				cancelIn(ctx)
			}
		}
		return err
	}
}

// Once Redis holds a Delete or Set, the other instances are told, even when
// the writer's context ends right after the write.
func TestInvalidationOutlivesWriterContext(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		got := make(chan []string, 8)
		reader := localCache(t, rdb, withHooks(&hooks{OnInvalidate: func(k []string) { got <- k }}))
		writer := newCache[string](t, rdb, WithPrefix(prefixFor(t)))
		rdb.AddHook(cancelAfterWrite{})
		for i, write := range []func(ctx context.Context) error{
			func(ctx context.Context) error { return writer.Set(ctx, "k", "new") },
			func(ctx context.Context) error { return writer.Delete(ctx, "k") },
		} {
			if err := writer.Set(ctx, "k", "old"); err != nil {
				t.Fatal(err)
			}
			waitInvalidation(t, got, "k")
			if v, _ := reader.Get(ctx, "k", never(t)); v != "old" {
				t.Fatal(v)
			}
			if _, ok := reader.tier.Store().Get("k"); !ok {
				t.Fatal("reader did not keep a local copy")
			}
			wctx := withCancelAfterWrite(ctx)
			write(wctx) // its error (the context's) does not matter: Redis has the write
			if wctx.Err() == nil {
				t.Fatal("the hook did not cancel the writer's context")
			}
			waitInvalidation(t, got, "k")
			if _, ok := reader.tier.Store().Get("k"); ok {
				t.Fatalf("write %d: reader still holds the key", i)
			}
		}
	})
}

// waitInvalidation waits for the reader to apply an invalidation of key. The
// timeout only turns a lost message into a failure instead of a hang.
func waitInvalidation(t *testing.T, got <-chan []string, key string) {
	t.Helper()
	select {
	case keys := <-got:
		for _, k := range keys {
			if k == key {
				return
			}
		}
		t.Fatalf("invalidated %q, want %q", keys, key)
	case <-time.After(5 * time.Second):
		t.Fatalf("no invalidation of %q reached the reader", key)
	}
}

// proxiedSingle starts a private server and a fault proxy in front of it,
// returning a client that goes through the proxy (no retries of its own, so
// that faults reach the cache) and one that goes straight to the server.
func proxiedSingle(t *testing.T) (p *faultproxy.Proxy, viaProxy, direct *redis.Client) {
	t.Helper()
	srv, _ := redistest.RealSingle(t)
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	viaProxy = redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { viaProxy.Close() })
	return p, viaProxy, srv.Client()
}

// pubsubLinks returns the proxy's links that the server reports as pub/sub
// connections.
func pubsubLinks(t *testing.T, direct *redis.Client, p *faultproxy.Proxy) []*faultproxy.Link {
	t.Helper()
	list, err := direct.Do(context.Background(), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatal(err)
	}
	var out []*faultproxy.Link
	for _, line := range strings.Split(list, "\n") {
		for _, f := range strings.Fields(line) {
			if addr, ok := strings.CutPrefix(f, "addr="); ok {
				for _, l := range p.Links() {
					if l.ServerSideAddr() == addr {
						out = append(out, l)
					}
				}
			}
		}
	}
	return out
}

// A subscriber whose connection goes silent (half-open: the server and the
// client both think it is up, but nothing arrives) is found out by its
// health check; meanwhile its local tier stops serving within the bound, and
// the reconnection flushes it. The local TTL is long on purpose: only the
// health check can bound the staleness here.
func TestHalfOpenSubscriberIsDetected(t *testing.T) {
	p, viaProxy, direct := proxiedSingle(t)
	ctx := context.Background()
	ups := make(chan struct{}, 8)
	got := make(chan []string, 8)
	reader := localCache(t, viaProxy, WithLocalTTL(time.Minute), testHealth, withHooks(&hooks{
		OnSubscribed: func() { ups <- struct{}{} },
		OnInvalidate: func(k []string) { got <- k },
	}))
	<-ups
	writer := newCache[string](t, direct, WithPrefix(prefixFor(t)))
	writer.Set(ctx, "k", "old")
	waitInvalidation(t, got, "k") // so that it cannot land during the read below
	if v, _ := reader.Get(ctx, "k", never(t)); v != "old" {
		t.Fatal(v)
	}
	if _, ok := reader.tier.Store().Get("k"); !ok {
		t.Fatal("not cached locally")
	}
	links := pubsubLinks(t, direct, p)
	if len(links) != 1 {
		t.Fatalf("%d pub/sub links", len(links))
	}
	links[0].Blackhole(faultproxy.Both)
	blackholed := time.Now()
	if err := writer.Set(ctx, "k", "new"); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	bound := testHealthBound()
	for {
		before := time.Now()
		v, err := reader.Get(ctx, "k", never(t))
		if err != nil {
			t.Fatal(err)
		}
		if v == "new" {
			t.Logf("stale reads stopped %v after the write returned", before.Sub(written))
			break
		}
		if stale := before.Sub(written); stale > bound+staleSlack {
			t.Fatalf("local entry served stale %v after the write, bound %v", stale, bound)
		}
		time.Sleep(5 * time.Millisecond) // pacing the probe, not synchronising
	}
	// The silent connection is given up and a new subscription flushes the tier.
	select {
	case <-ups:
	case <-time.After(10 * time.Second):
		t.Fatal("subscriber never reconnected")
	}
	st := reader.Stats()
	if st.SubscriptionDowns < 1 || st.LocalFlushes < 2 {
		t.Fatalf("downs %d, flushes %d", st.SubscriptionDowns, st.LocalFlushes)
	}
	t.Logf("half-open subscriber: local tier stopped serving and reconnected %v after the blackhole (bound %v)",
		time.Since(blackholed), bound)
}

// slotOwner returns the index of the master that serves slot, and every
// master's node id.
func slotOwner(t *testing.T, masters []*redistest.Server, slot int64) (int, []string) {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for _, m := range masters {
		id, err := m.Client().Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slots, err := masters[0].Client().ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			for i, id := range ids {
				if s.Nodes[0].ID == id {
					return i, ids
				}
			}
		}
	}
	t.Fatalf("no owner for slot %d", slot)
	return -1, nil
}

// moveSlot hands slot (which holds no keys) from its owner to another master,
// as a resharding does; the owner then ends its sharded subscriptions on it.
func moveSlot(t *testing.T, cl *redistest.Cluster, slot int64) {
	t.Helper()
	ctx := context.Background()
	owner, ids := slotOwner(t, cl.Masters, slot)
	if n, err := cl.Masters[owner].Client().Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", slot).Int(); err != nil || n != 0 {
		t.Fatalf("slot %d holds %d keys (%v)", slot, n, err)
	}
	to := (owner + 1) % len(cl.Masters)
	src, dst := cl.Masters[owner].Client(), cl.Masters[to].Client()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[owner]).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]).Err())
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err())
	for i, m := range cl.Masters {
		if i != owner && i != to {
			must(m.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err())
		}
	}
}

// When the invalidation channel's slot moves to another master, the old
// owner ends the sharded subscription; the subscriber must subscribe again on
// the new owner (not on its old connection, which answers MOVED forever), and
// flush its local tier.
func TestClusterResubscribesAfterSlotMove(t *testing.T) {
	cl, rdb := redistest.StartCluster(t)
	ctx := context.Background()
	ups := make(chan struct{}, 8)
	got := make(chan []string, 8)
	reader := localCache(t, rdb, testHealth, withHooks(&hooks{
		OnSubscribed: func() { ups <- struct{}{} },
		OnInvalidate: func(k []string) { got <- k },
	}))
	<-ups
	writer := newCache[string](t, cl.Client(), WithPrefix(prefixFor(t)))
	writer.Set(ctx, "k", "v0")
	waitInvalidation(t, got, "k")

	slot, err := rdb.(*redis.ClusterClient).ClusterKeySlot(ctx, reader.bus.Channel()).Result()
	if err != nil {
		t.Fatal(err)
	}
	moveSlot(t, cl, slot)
	select {
	case <-ups:
	case <-time.After(10 * time.Second):
		t.Fatal("subscriber never subscribed again after the slot moved")
	}
	for i := 1; i <= 3; i++ {
		writer.Set(ctx, "k", fmt.Sprint("v", i))
		waitInvalidation(t, got, "k")
	}
}

// testHealth makes the subscriber's health check fast enough for tests;
// testHealthBound is the staleness bound it gives.
var testHealth = WithInvalidationHealthCheck(100*time.Millisecond, 200*time.Millisecond)

func testHealthBound() time.Duration { return 300 * time.Millisecond }

// staleSlack allows for the local tier's coarse clock and for the probe's own
// scheduling when a test checks the staleness bound.
const staleSlack = 100 * time.Millisecond

func TestInvalidationMessageCodec(t *testing.T) {
	m := wire.Invalidation{Source: [wire.SourceIDSize]byte{1, 2}, Sent: 12345, Seq: 7,
		Keys: []string{"a", "", "\x00\xff", string(make([]byte, 300))}}
	got, err := wire.DecodeInvalidation(wire.EncodeInvalidation(m))
	if err != nil || got.Source != m.Source || got.Seq != 7 || got.Sent != 12345 || !slices.Equal(got.Keys, m.Keys) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// Fields a later version appends are skipped.
	if got, err := wire.DecodeInvalidation(append(wire.EncodeInvalidation(m), 1, 2, 3)); err != nil || !slices.Equal(got.Keys, m.Keys) {
		t.Fatalf("with a trailer: %v", err)
	}
	good := wire.EncodeInvalidation(m)
	bad := [][]byte{nil, make([]byte, 5), make([]byte, 40), good[:len(good)-1], good[:wire.InvalidationHeaderSize],
		// a key count far beyond the bytes present
		append(append([]byte{}, good[:wire.InvalidationHeaderSize+1]...), 0xff, 0xff, 0xff, 0xff, 0x0f),
		// the previous layout: 16 bytes of source id, then keys
		append(make([]byte, 16), 1, 'a')}
	for _, b := range bad {
		if _, err := wire.DecodeInvalidation(b); err == nil {
			t.Errorf("decoded %q", b)
		}
	}
}

// Fuzzing the decoder: any bytes decode or fail, never panic, and what
// decodes encodes back to an equal message.
func FuzzDecodeInvalidation(f *testing.F) {
	f.Add(wire.EncodeInvalidation(wire.Invalidation{Seq: 1, Keys: []string{"k"}}))
	f.Add([]byte{wire.Magic, wire.MagicInvalidation, wire.InvalidationFormat})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := wire.DecodeInvalidation(b)
		if err != nil {
			return
		}
		again, err := wire.DecodeInvalidation(wire.EncodeInvalidation(m))
		if err != nil || again.Seq != m.Seq || !slices.Equal(again.Keys, m.Keys) {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

// publishRaw publishes b on c's invalidation channel as another instance
// would (a sharded channel on a cluster).
func publishRaw[V any](t *testing.T, c *Cache[V], b []byte) {
	t.Helper()
	ctx := context.Background()
	var err error
	if c.redis.Sharded() {
		err = c.redis.Client().SPublish(ctx, c.bus.Channel(), b).Err()
	} else {
		err = c.redis.Client().Publish(ctx, c.bus.Channel(), b).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A gap in a publisher's sequence numbers means a message was lost: its keys
// are unknown, so the local tier is cleared, and the gap is counted. A
// message that does not decode clears it too, and is counted, never a panic.
func TestInvalidationGapClearsLocalTier(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		got := make(chan []string, 8)
		reader := localCache(t, rdb, withHooks(&hooks{OnInvalidate: func(k []string) { got <- k }}))
		other := [wire.SourceIDSize]byte{9}
		msg := func(seq uint64, key string) []byte {
			return wire.EncodeInvalidation(wire.Invalidation{Source: other, Sent: time.Now().UnixNano(), Seq: seq, Keys: []string{key}})
		}
		cacheK := func() {
			t.Helper()
			reader.Get(ctx, "k", func(context.Context, string) (string, error) { return "v", nil })
			if _, ok := reader.tier.Store().Get("k"); !ok {
				t.Fatal("k not cached locally")
			}
		}
		cacheK()
		publishRaw(t, reader, msg(1, "a"))
		waitInvalidation(t, got, "a")
		publishRaw(t, reader, msg(2, "b"))
		waitInvalidation(t, got, "b")
		if _, ok := reader.tier.Store().Get("k"); !ok {
			t.Fatal("k dropped without a gap")
		}
		publishRaw(t, reader, msg(5, "c")) // 3 and 4 were lost
		waitInvalidation(t, got, "c")
		if _, ok := reader.tier.Store().Get("k"); ok {
			t.Fatal("k survived a gap in the sequence")
		}
		st := reader.Stats()
		if st.InvalidationGaps != 1 || st.InvalidationsLost != 2 || st.InvalidationsReceived != 3 || st.InvalidationLagMax <= 0 {
			t.Fatalf("gaps %d lost %d received %d lag max %v", st.InvalidationGaps, st.InvalidationsLost, st.InvalidationsReceived, st.InvalidationLagMax)
		}
		// A late, older message is applied but is no gap.
		publishRaw(t, reader, msg(4, "d"))
		waitInvalidation(t, got, "d")
		if st := reader.Stats(); st.InvalidationGaps != 1 {
			t.Fatalf("a reordered message counted as a gap")
		}

		cacheK()
		publishRaw(t, reader, []byte("not an invalidation"))
		publishRaw(t, reader, append(make([]byte, 16), 1, 'k')) // the previous layout
		publishRaw(t, reader, msg(6, "e"))                      // ordered after the two above
		waitInvalidation(t, got, "e")
		if _, ok := reader.tier.Store().Get("k"); ok {
			t.Fatal("k survived an undecodable message")
		}
		if st := reader.Stats(); st.InvalidationDecodeErrors != 2 || st.InvalidationGaps != 1 {
			t.Fatalf("decode errors %d, gaps %d", st.InvalidationDecodeErrors, st.InvalidationGaps)
		}
	})
}

// faultOnPublish runs after with every command the client sends and its
// error.
type faultOnPublish struct {
	after func(cmd redis.Cmder, err error)
}

func (faultOnPublish) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h faultOnPublish) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after(cmd, err)
		return err
	}
}
func (faultOnPublish) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A publish that fails (here: the writer's link goes silent right after its
// write, and the PUBLISH times out) is retried on a new connection.
func TestInvalidationPublishIsRetried(t *testing.T) {
	p, viaProxy, direct := proxiedSingle(t)
	ctx := context.Background()
	got := make(chan []string, 8)
	localCache(t, direct, withHooks(&hooks{OnInvalidate: func(k []string) { got <- k }}))
	writer := newCache[string](t, viaProxy, WithPrefix(prefixFor(t)))
	var mu sync.Mutex
	var publishes []error
	viaProxy.AddHook(faultOnPublish{after: func(cmd redis.Cmder, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch cmd.Name() {
		case "evalsha", "eval":
			if len(publishes) == 0 && isSetWrite(cmd, err) {
				p.Blackhole(faultproxy.Both) // the Set landed; now the link goes silent
			}
		case "publish":
			publishes = append(publishes, err)
			if len(publishes) == 1 {
				p.Heal()
			}
		}
	}})
	if err := writer.Set(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	waitInvalidation(t, got, "k")
	mu.Lock()
	defer mu.Unlock()
	if len(publishes) < 2 || publishes[0] == nil || publishes[len(publishes)-1] != nil {
		t.Fatalf("publish attempts: %v", publishes)
	}
	if st := writer.Stats(); st.InvalidationsSent != 1 || st.InvalidationSendFailures != 0 {
		t.Fatalf("sent %d, failures %d", st.InvalidationsSent, st.InvalidationSendFailures)
	}
}

func TestInvalidationHealthCheckOption(t *testing.T) {
	_, rdb := newSingle(t)
	for _, o := range []Option{
		WithInvalidationHealthCheck(0, time.Second),
		WithInvalidationHealthCheck(time.Second, 0),
		WithInvalidationHealthCheck(-time.Second, time.Second),
	} {
		if _, err := New(rdb, Values[string]{}, WithPrefix("opt:"), WithLocal(1<<20), WithLocalAdmitAll(), o); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("accepted: %v", err)
		}
	}
}
