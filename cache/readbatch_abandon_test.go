package cache

import (
	"context"
	"errors"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// writesInFlight counts the test's commands other than GET that are inside
// go-redis (sent or about to be, their reply not in yet, retries included)
// and those that came back.
type writesInFlight struct {
	rt    roundTrips
	n     atomic.Int64
	ended atomic.Int64
}

func (h *writesInFlight) write(cmd redis.Cmder) bool { return cmd.Name() != "get" && h.rt.ours(cmd) }

func (h *writesInFlight) around(cmds []redis.Cmder) (after func()) {
	if !slices.ContainsFunc(cmds, h.write) {
		return nil
	}
	h.n.Add(1)
	return func() { h.n.Add(-1); h.ended.Add(1) }
}

// roundTripHook is a go-redis hook that runs around every round trip (a
// plain command, as a list of one, or a pipeline): the function, then the
// round trip, then what the function returned (when not nil).
type roundTripHook func(cmds []redis.Cmder) (after func())

func (f roundTripHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if after := f([]redis.Cmder{cmd}); after != nil {
			defer after()
		}
		return next(ctx, cmd)
	}
}
func (f roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if after := f(cmds); after != nil {
			defer after()
		}
		return next(ctx, cmds)
	}
}

// slowReads is how long the client of TestAbandonedWritesDoNotHoldReads
// waits for a reply: the paused writes stay under way that long.
const slowReads = 30 * time.Second

// pauseWrites holds the writes of the node serving rkey (CLIENT PAUSE
// WRITE) for longer than any test waits; unpause ends it.
func pauseWrites(t *testing.T, rdb redis.UniversalClient, rkey string) (unpause func()) {
	t.Helper()
	ctx := context.Background()
	node, ok := transport.NodeFor(ctx, rdb, rkey)
	if !ok {
		node = rdb.(*redis.Client)
	}
	if err := node.Do(ctx, "CLIENT", "PAUSE", time.Minute.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := node.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Error(err)
		}
	}
}

// Two writes of one node whose callers left at their 100 ms deadline stay
// blocked by CLIENT PAUSE WRITE; a Get of a warm key of that node is not
// held behind them: it returns its value while they are still under way.
// So for each kind of write a node's queue carries (Deletes, Sets, a
// Get's lease attempts and fills), on a single node and on a cluster's
// master, on a client that reads a reply past its context's deadline
// (go-redis's default), for 30 s; no goroutine is left after Close.
func TestAbandonedWritesDoNotHoldReads(t *testing.T) {
	redistest.NeedServer(t) // CLIENT PAUSE
	for _, topo := range []struct {
		name  string
		start func(t *testing.T) redis.UniversalClient
	}{
		{"single", func(t *testing.T) redis.UniversalClient {
			srv := redistest.Start(t)
			return redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: slowReads})
		}},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			cl, _ := redistest.StartCluster(t)
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ReadTimeout: slowReads})
		}},
	} {
		t.Run(topo.name, func(t *testing.T) {
			rdb := topo.start(t)
			t.Cleanup(func() { rdb.Close() })
			before := runtime.NumGoroutine()
			c := newCache[string](t, rdb)
			h := &writesInFlight{rt: roundTrips{prefix: prefixFor(t)}}
			rdb.AddHook(roundTripHook(h.around))
			ctx := context.Background()
			warm := "{q}warm"
			if err := c.Set(ctx, warm, "v"); err != nil { // the Set script loaded
				t.Fatal(err)
			}
			if _, err := c.Get(ctx, "{q}loaded", func(context.Context, string) (string, error) { return "v", nil }); err != nil {
				t.Fatal(err) // the lease and fill scripts loaded
			}
			var unpause func()
			paused := make(chan struct{})
			load := func(context.Context, string) (string, error) { return "row", nil }
			// fill's loader pauses the node once both loads are under way,
			// so that both fills are sent to a paused node.
			var loading atomic.Int64
			pauseThenLoad := func(context.Context, string) (string, error) {
				if loading.Add(1) == 2 {
					unpause = pauseWrites(t, rdb, c.keys.Key(warm))
					close(paused)
				}
				<-paused
				return "row", nil
			}
			for _, kind := range []struct {
				name  string
				write func(ctx context.Context, key string) error
				pause bool // before the writes (else the loader pauses)
			}{
				{"delete", func(ctx context.Context, k string) error { return c.Delete(ctx, k) }, true},
				{"set", func(ctx context.Context, k string) error { return c.Set(ctx, k, "new") }, true},
				{"lease attempt", func(ctx context.Context, k string) error { _, err := c.Get(ctx, k, load); return err }, true},
				{"fill", func(ctx context.Context, k string) error { _, err := c.Get(ctx, k, pauseThenLoad); return err }, false},
			} {
				keys := []string{"{q}" + kind.name + "1", "{q}" + kind.name + "2"}
				if kind.name == "delete" {
					for _, k := range keys {
						if err := c.Set(ctx, k, "old"); err != nil {
							t.Fatal(err)
						}
					}
				}
				if kind.pause {
					unpause = pauseWrites(t, rdb, c.keys.Key(warm))
				}
				errs := make(chan error, len(keys))
				for _, k := range keys {
					go func() {
						wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
						defer cancel()
						errs <- kind.write(wctx, k)
					}()
				}
				for range keys {
					if err := recvOr(t, errs, "an abandoned "+kind.name); !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%s on a paused node: %v, want its deadline's error", kind.name, err)
					}
				}
				waitFor(t, func() bool { return h.n.Load() == int64(len(keys)) })
				ended := h.ended.Load()
				start := time.Now()
				gctx, cancel := context.WithTimeout(ctx, slowReads/3)
				v, err := c.Get(gctx, warm, noLoad)
				took, came := time.Since(start), h.ended.Load()-ended
				cancel()
				t.Logf("%s: Get of a warm key took %v with two abandoned writes under way", kind.name, took)
				if err != nil || v != "v" {
					t.Errorf("%s: Get of a warm key = %q, %v (took %v): it queued behind commands whose callers had left", kind.name, v, err, took)
				}
				if came != 0 {
					t.Errorf("%s: the Get of a warm key returned after %d paused writes came back (took %v)", kind.name, came, took)
				}
				unpause()
				waitFor(t, func() bool { return h.n.Load() == 0 })
			}
			closeWithoutLeaks(t, c, rdb, before)
		})
	}
}

// heldGets holds every round trip (a plain command or a pipeline) carrying
// a GET of one of its keys, as a stalled connection would, until release
// is called for that key; entered receives the key of each one it holds.
type heldGets struct {
	mu      sync.Mutex
	holds   map[string]chan struct{}
	entered chan string
}

func newHeldGets(rkeys ...string) *heldGets {
	h := &heldGets{holds: map[string]chan struct{}{}, entered: make(chan string, len(rkeys))}
	for _, k := range rkeys {
		h.holds[k] = make(chan struct{})
	}
	return h
}

// release lets rkey's held round trip, and every later one, through.
func (h *heldGets) release(rkey string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.holds[rkey]; ok {
		delete(h.holds, rkey)
		close(ch)
	}
}

// releaseAll is release of every key still held.
func (h *heldGets) releaseAll() {
	h.mu.Lock()
	keys := slices.Collect(maps.Keys(h.holds))
	h.mu.Unlock()
	for _, k := range keys {
		h.release(k)
	}
}

func (h *heldGets) hold(cmds []redis.Cmder) (after func()) {
	for _, cmd := range cmds {
		if cmd.Name() != "get" {
			continue
		}
		k, _ := cmd.Args()[1].(string)
		h.mu.Lock()
		ch, ok := h.holds[k]
		h.mu.Unlock()
		if ok {
			h.entered <- k
			<-ch
			return nil
		}
	}
	return nil
}

// holdFirstReads sets transport.ReadsInFlight+1 keys of one node to "v-"+key and holds
// the GETs of the first transport.ReadsInFlight of them (heldGets) until the test ends
// or they are released.
func holdFirstReads(t *testing.T, c *Cache[string], rdb redis.UniversalClient) ([]string, *heldGets) {
	t.Helper()
	keys := batchKeys(transport.ReadsInFlight + 1)
	for _, k := range keys {
		if err := c.Set(context.Background(), k, "v-"+k); err != nil {
			t.Fatal(err)
		}
	}
	h := newHeldGets(c.keys.Key(keys[0]), c.keys.Key(keys[1]))
	rdb.AddHook(roundTripHook(h.hold))
	t.Cleanup(h.releaseAll)
	return keys, h
}

// getWarm is a Get of key, set to "v-"+key, that must return its value
// although the reads its node sent before it are held: it fails if the Get
// queued behind them until its generous deadline ran out.
func getWarm(t *testing.T, c *Cache[string], key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	v, err := c.Get(ctx, key, noLoad)
	t.Logf("Get of a warm key took %v while the node's earlier reads are held", time.Since(start))
	if err != nil || v != "v-"+key {
		t.Errorf("Get(%s) = %q, %v: it queued behind reads whose callers had left", key, v, err)
	}
}

// Two Gets whose plain GETs hang (a stalled connection) leave at their
// 100 ms deadline; a Get of another key of that node does not queue behind
// their reads: it returns its value while they still hang.
func TestAbandonedReadsGiveBackTheirPlace(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys, h := holdFirstReads(t, c, rdb)
		errs := make(chan error, transport.ReadsInFlight)
		for _, k := range keys[:transport.ReadsInFlight] {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_, err := c.Get(ctx, k, noLoad)
				errs <- err
			}()
		}
		for range transport.ReadsInFlight {
			recvOr(t, h.entered, "a held read")
			if err := recvOr(t, errs, "an abandoned Get"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Get whose read hangs: %v, want its deadline's error", err)
			}
		}
		getWarm(t, c, keys[transport.ReadsInFlight])
		h.releaseAll()
		waitFor(t, func() bool { return c.redis.Wait(0) })
		checkFlightsIdle(t, c)
	})
}

// A pipeline of queued reads hangs, and every caller of it leaves: it no
// longer holds a place of its node's queue, so a Get of another key goes
// out beside it (the other place is held by a plain read whose caller
// waits) and returns its value; every Get that waited gets its value once
// the reads go on, and no goroutine is left after Close.
func TestAbandonedBatchGivesBackItsPlace(t *testing.T) {
	_, rdb := newSingle(t)
	before := runtime.NumGoroutine()
	c := newCache[string](t, rdb)
	keys := batchKeys(transport.ReadsInFlight + 3)
	for _, k := range keys {
		if err := c.Set(context.Background(), k, "v-"+k); err != nil {
			t.Fatal(err)
		}
	}
	h := newHeldGets(c.keys.Key(keys[0]), c.keys.Key(keys[1]), c.keys.Key(keys[2]))
	rdb.AddHook(roundTripHook(h.hold))
	t.Cleanup(h.releaseAll)
	plain := getEach(c, context.Background(), keys[:1])
	recvOr(t, h.entered, "a held read")
	plain = append(plain, getEach(c, context.Background(), keys[1:2])...)
	recvOr(t, h.entered, "a held read")
	ctx, leave := context.WithCancel(context.Background())
	batch := getEach(c, ctx, keys[2:4])
	waitQueued(t, c, c.keys.Key(keys[0]), 2)
	h.release(c.keys.Key(keys[0])) // its place goes to the batch, which hangs
	recvOr(t, h.entered, "the held batch")
	leave()
	for _, ch := range batch {
		if a := recvOr(t, ch, "a Get of the batch"); !errors.Is(a.err, context.Canceled) {
			t.Errorf("Get of the held batch after its caller left = %q, %v", a.v, a.err)
		}
	}
	getWarm(t, c, keys[4])
	h.releaseAll()
	for i, ch := range plain {
		if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
		}
	}
	closeWithoutLeaks(t, c, rdb, before)
}

// closeWithoutLeaks waits until c's calls left running have ended and its
// flights are idle, closes c and rdb, and checks that no more goroutines
// run than before (counted before c was made).
func closeWithoutLeaks(t *testing.T, c *Cache[string], rdb redis.UniversalClient, before int) {
	t.Helper()
	waitFor(t, func() bool { return c.redis.Wait(0) })
	// A background fill leaves its flight after its round trip came back
	// (which is all the callers waited for): wait for the table to empty,
	// bounded, and name what is still there if it does not.
	for deadline := time.Now().Add(eventBound); len(busyFlightShards(c)) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	checkFlightsIdle(t, c)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	rdb.Close()
	settleGoroutines(t, before)
}
