//go:build unix

package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/transport"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The server freezes (SIGSTOP) with a pipeline of queued reads on the wire:
// every caller with a deadline, the queued ones and the ones behind them,
// returns by its deadline with its context's error; once the server goes on
// (SIGCONT) every read succeeds, and after Close no goroutine is left.
func TestQueuedReadsBoundedByDeadlineWhileFrozen(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	before := runtime.NumGoroutine()
	c := newCache[string](t, rdb)
	keys := batchKeys(transport.ReadsInFlight + 40)
	h, held := holdTwoReads(t, rdb, c, keys)
	gate := newPipelineGate(t)
	rdb.AddHook(gate)
	const budget = 500 * time.Millisecond
	bounded := func(keys []string) []chan error {
		out := make([]chan error, len(keys))
		for i, k := range keys {
			out[i] = make(chan error, 1)
			go func() {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), budget)
				defer cancel()
				_, err := c.Get(ctx, k, noLoad)
				if el := time.Since(start); el > budget+time.Second {
					t.Errorf("Get(%s) took %v against a frozen server, budget %v", k, el, budget)
				}
				out[i] <- err
			}()
		}
		return out
	}
	// The first batch: queued while the two reads are held, then sent to
	// the frozen server.
	batch := getEach(c, context.Background(), keys[transport.ReadsInFlight:transport.ReadsInFlight+10])
	waitQueued(t, c, prefixFor(t)+keys[0], 10)
	close(h.release)
	stopDrain := drainHeld(t, h)
	for i, ch := range held {
		if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
		}
	}
	recvOr(t, gate.sending, "the pipeline")
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	close(gate.open)
	// Behind it: reads sent at once (one place is free) and queued ones.
	late := bounded(keys[transport.ReadsInFlight+10:])
	for _, ch := range late {
		if err := recvOr(t, ch, "a Get with a deadline"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get against a frozen server: %v, want context.DeadlineExceeded", err)
		}
	}
	srv.Thaw()
	for _, ch := range batch {
		if a := recvOr(t, ch, "a Get of the frozen batch"); a.err != nil && !errors.Is(a.err, ErrRedis) {
			t.Errorf("Get of the frozen batch: %q, %v", a.v, a.err)
		}
	}
	for _, k := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if v, err := c.Get(ctx, k, noLoad); err != nil || v != "v-"+k {
			t.Errorf("Get(%s) after the server went on = %q, %v", k, v, err)
		}
		cancel()
	}
	checkFlightsIdle(t, c)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	rdb.Close()
	stopDrain()
	settleGoroutines(t, before)
}

// The server is killed with a pipeline of queued reads about to go out:
// each queued caller fails with ErrRedis on its own and the breaker counts
// each failure (it opens, and later calls fail at once); fallback loads
// stay under their cap however many callers fail together; once the
// server is back and the breaker probes, reads succeed again.
func TestQueuedReadsFailAloneWhenKilled(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := srv.Client()
	const failures, cap = 3, 2
	c := newCache[string](t, rdb, WithCircuitBreaker(failures, 300*time.Millisecond), WithFallbackLoads(cap))
	keys := batchKeys(transport.ReadsInFlight + 30)
	h, held := holdTwoReads(t, rdb, c, keys)
	gate := newPipelineGate(t)
	rdb.AddHook(gate)
	var running, most atomic.Int64
	release := make(chan struct{})
	load := func(_ context.Context, k string) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		return "loaded-" + k, nil
	}
	queued := make([]chan getAnswer, 0, 30)
	for _, k := range keys[transport.ReadsInFlight:] {
		ch := make(chan getAnswer, 1)
		queued = append(queued, ch)
		go func() {
			v, err := c.Get(context.Background(), k, load)
			ch <- getAnswer{v, err}
		}()
	}
	waitQueued(t, c, prefixFor(t)+keys[0], 30)
	close(h.release)
	stopDrain := drainHeld(t, h)
	defer stopDrain()
	for i, ch := range held {
		if a := recvOr(t, ch, "a held Get"); a.err != nil || a.v != "v-"+keys[i] {
			t.Errorf("Get(%s) = %q, %v", keys[i], a.v, a.err)
		}
	}
	recvOr(t, gate.sending, "the pipeline")
	srv.Kill()
	close(gate.open)
	waitFor(t, func() bool { return running.Load() == cap })
	close(release)
	loaded := 0
	for i, ch := range queued {
		a := recvOr(t, ch, "a queued Get")
		switch {
		case a.err == nil && a.v == "loaded-"+keys[transport.ReadsInFlight+i]:
			loaded++
		case errors.Is(a.err, ErrRedis):
		default:
			t.Errorf("queued Get(%s) on a killed server = %q, %v", keys[transport.ReadsInFlight+i], a.v, a.err)
		}
	}
	if m := most.Load(); m > cap {
		t.Errorf("%d fallback loads at once, cap %d", m, cap)
	}
	t.Logf("%d of %d callers loaded from the source", loaded, len(queued))
	if _, err := c.Get(context.Background(), keys[0], load); !errors.Is(err, ErrCircuitOpen) && err != nil {
		t.Errorf("Get after %d failures = %v; want the breaker open (or a fallback load)", len(queued), err)
	}
	if s := c.Stats(); s.Corrupt != 0 {
		t.Errorf("%d corrupt entries counted", s.Corrupt)
	}
	srv.Restart() // empty: every key a miss, loaded
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range keys {
		for {
			v, err := c.Get(context.Background(), k, noLoad)
			if err == nil && v == "loaded" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Get(%s) after the restart = %q, %v", k, v, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	checkFlightsIdle(t, c)
}

// Thousands of Gets on one node keep it saturated (reads queue behind the
// two under way) while another instance writes: a Get that starts after a
// write returned sees that write or a newer one, every Get gets its own
// key's value, and the reads go out in far fewer round trips than Gets.
func TestReadAfterWriteWhileQueueSaturated(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	readers := 10_000
	if raceEnabled {
		readers = 4_000
	}
	writer := newCache[string](t, srv.Client())
	rdb := srv.Client()
	rt := &roundTrips{prefix: prefixFor(t)}
	rdb.AddHook(rt)
	c := newCache[string](t, rdb)
	ctx := context.Background()
	const nkeys = 200
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
		if err := writer.Set(ctx, keys[i], keys[i]+"#0"); err != nil {
			t.Fatal(err)
		}
	}
	rt.n.Store(0)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range readers {
		wg.Go(func() {
			<-start
			k := keys[i%nkeys]
			v, err := c.Get(ctx, k, noLoad)
			if err != nil || !strings.HasPrefix(v, k+"#") {
				t.Errorf("Get(%s) = %q, %v", k, v, err)
			}
		})
	}
	close(start)
	// Writes of keys outside the readers' set: each read after its write
	// must see it, through a queue kept full by the readers.
	for i := range 200 {
		k := fmt.Sprintf("w%d", i%20)
		want := fmt.Sprintf("%s#%d", k, i)
		if err := writer.Set(ctx, k, want); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, k, noLoad); err != nil || v != want {
			t.Fatalf("Get(%s) after Set returned = %q, %v; want %q", k, v, err, want)
		}
	}
	wg.Wait()
	t.Logf("%d Gets in %d round trips", readers+200, rt.n.Load())
	if n := rt.n.Load(); n > int64(readers/2) {
		t.Errorf("%d round trips for %d Gets: reads were not batched", n, readers)
	}
	checkFlightsIdle(t, c)
}

// A caller whose context ends after its GET was taken into a pipeline, but
// before the pipeline is sent, leaves at once with its context's error; the
// others of the batch get their values, and a caller whose context had
// ended before it came never joins the queue.
func TestQueuedReadLeavesAfterBeingTakenIntoABatch(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		keys := batchKeys(transport.ReadsInFlight + 4)
		h, held := holdTwoReads(t, rdb, c, keys)
		gate := newPipelineGate(t)
		rdb.AddHook(gate)
		ctx, cancel := context.WithCancel(context.Background())
		left := getEach(c, ctx, keys[transport.ReadsInFlight:transport.ReadsInFlight+1])
		rest := getEach(c, context.Background(), keys[transport.ReadsInFlight+1:transport.ReadsInFlight+3])
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		ended, endNow := context.WithCancel(context.Background())
		endNow()
		if _, err := c.Get(ended, keys[transport.ReadsInFlight+3], noLoad); !errors.Is(err, context.Canceled) {
			t.Errorf("Get on an ended context = %v", err)
		}
		waitQueued(t, c, prefixFor(t)+keys[0], 3)
		close(h.release)
		defer drainHeld(t, h)()
		recvOr(t, gate.sending, "the pipeline")
		cancel()
		if a := recvOr(t, left[0], "the cancelled Get"); !errors.Is(a.err, context.Canceled) {
			t.Errorf("Get cancelled while its pipeline is held = %q, %v", a.v, a.err)
		}
		close(gate.open)
		for i, ch := range slices.Concat(held, rest) {
			k := slices.Concat(keys[:transport.ReadsInFlight], keys[transport.ReadsInFlight+1:])[i]
			if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+k {
				t.Errorf("Get(%s) = %q, %v", k, a.v, a.err)
			}
		}
		checkFlightsIdle(t, c)
	})
}

// A burst of callers of big values queued at once goes out in pipelines of
// at most transport.MaxReadBatch GETs, one after another: what one round trip holds
// is bounded whatever the burst.
func TestQueuedBigValuesGoOutInBoundedBatches(t *testing.T) {
	redistest.NeedServer(t)
	_, rdb := redistest.RealSingle(t)
	c := newCache[string](t, rdb)
	n := transport.MaxReadBatch + transport.MaxReadBatch/2
	keys := batchKeys(transport.ReadsInFlight + n)
	big := strings.Repeat("x", 64<<10)
	ctx := context.Background()
	// Written first: a Set goes through the node's queue too.
	for _, k := range keys[transport.ReadsInFlight:] {
		if err := c.Set(ctx, k, big+k); err != nil {
			t.Fatal(err)
		}
	}
	h, held := holdTwoReads(t, rdb, c, keys[:transport.ReadsInFlight])
	var mu sync.Mutex
	var sizes []int // GETs of the test's keys in each pipeline
	rdb.AddHook(onOurPipelines(t, func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
		mu.Lock()
		sizes = append(sizes, len(cmds))
		mu.Unlock()
		return next(ctx, cmds)
	}))
	queued := getEach(c, ctx, keys[transport.ReadsInFlight:])
	waitQueued(t, c, prefixFor(t)+keys[0], n)
	close(h.release)
	defer drainHeld(t, h)()
	for _, ch := range held {
		recvOr(t, ch, "a held Get")
	}
	for i, ch := range queued {
		if a := recvOr(t, ch, "a queued Get"); a.err != nil || a.v != big+keys[transport.ReadsInFlight+i] {
			t.Errorf("Get(%s): %d bytes, %v", keys[transport.ReadsInFlight+i], len(a.v), a.err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 2 || slices.Max(sizes) != transport.MaxReadBatch {
		t.Errorf("pipelines of %v GETs; want two, the first of %d", sizes, transport.MaxReadBatch)
	}
}

var errConnLost = errors.New("connection lost")

// failPlainGet fails the plain GET of key with a connection error.
type failPlainGet struct{ key string }

func (h *failPlainGet) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failPlainGet) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" && cmd.Args()[1] == h.key {
			return errConnLost
		}
		return next(ctx, cmd)
	}
}
func (h *failPlainGet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The breaker opens (a read under way fails) while reads are queued: the
// queued reads, let through before it opened, are answered, and their
// successes do not close it: the next Get is refused at once.
func TestBreakerOpensWhileReadsQueued(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb, WithCircuitBreaker(1, time.Hour))
		keys := batchKeys(transport.ReadsInFlight + 5)
		ctx := context.Background()
		for _, k := range keys {
			if err := c.Set(ctx, k, "v-"+k); err != nil {
				t.Fatal(err)
			}
		}
		h := &heldReads{rt: roundTrips{prefix: prefixFor(t)}, held: make(chan struct{}, transport.ReadsInFlight), release: make(chan struct{})}
		rdb.AddHook(h)
		rdb.AddHook(&failPlainGet{key: prefixFor(t) + keys[0]})
		first := getEach(c, ctx, keys[:1])
		recvOr(t, h.held, "the failing read")
		second := getEach(c, ctx, keys[1:2])
		recvOr(t, h.held, "a held read")
		queued := getEach(c, ctx, keys[transport.ReadsInFlight:])
		waitQueued(t, c, prefixFor(t)+keys[0], 5)
		close(h.release)
		defer drainHeld(t, h)()
		if a := recvOr(t, first[0], "the failing Get"); !errors.Is(a.err, errConnLost) {
			t.Errorf("failing Get = %q, %v", a.v, a.err)
		}
		for i, ch := range slices.Concat(second, queued) {
			if a := recvOr(t, ch, "a Get"); a.err != nil || a.v != "v-"+keys[1+i] {
				t.Errorf("Get(%s) = %q, %v", keys[1+i], a.v, a.err)
			}
		}
		if _, err := c.Get(ctx, keys[1], noLoad); !errors.Is(err, ErrCircuitOpen) {
			t.Errorf("Get after the breaker opened = %v; want ErrCircuitOpen", err)
		}
		checkFlightsIdle(t, c)
	})
}

// Close while a pipeline of queued reads is on the wire to a frozen
// server: Close returns by its timeout, saying the calls still ran; the
// callers get an error once the client's own timeout ends the pipeline,
// and then no goroutine of the cache is left.
func TestCloseWhileQueuedReadsFrozen(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	before := runtime.NumGoroutine()
	const closeTimeout = 200 * time.Millisecond
	c := newCache[string](t, rdb, WithCloseTimeout(closeTimeout))
	keys := batchKeys(transport.ReadsInFlight + 5)
	h, held := holdTwoReads(t, rdb, c, keys)
	gate := newPipelineGate(t)
	rdb.AddHook(gate)
	queued := getEach(c, context.Background(), keys[transport.ReadsInFlight:])
	waitQueued(t, c, prefixFor(t)+keys[0], 5)
	close(h.release)
	stopDrain := drainHeld(t, h)
	for _, ch := range held {
		recvOr(t, ch, "a held Get")
	}
	recvOr(t, gate.sending, "the pipeline")
	srv.Freeze()
	t.Cleanup(srv.Thaw)
	close(gate.open)
	start := time.Now()
	err := c.Close()
	if el := time.Since(start); el > closeTimeout+time.Second {
		t.Errorf("Close took %v, timeout %v", el, closeTimeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close with a pipeline on a frozen server = %v; want it to say calls still ran", err)
	}
	for _, ch := range queued {
		if a := recvOr(t, ch, "a queued Get"); !errors.Is(a.err, ErrRedis) {
			t.Errorf("queued Get on a frozen server = %q, %v; want ErrRedis", a.v, a.err)
		}
	}
	if _, err := c.Get(context.Background(), keys[0], noLoad); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close = %v", err)
	}
	srv.Thaw()
	rdb.Close()
	stopDrain()
	settleGoroutines(t, before)
}
