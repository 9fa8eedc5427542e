package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Get alone on its key reads without a flight; a caller that arrives
// during that read shares it, but a caller that arrives after a write of the
// key does not: it reads on its own and sees the write.
func TestSoloReadSharedUntilAWrite(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hold := newHeldGet(prefixFor(t), false)
		rdb.AddHook(hold)
		joined := make(chan string, 4)
		c := newCache[string](t, rdb, withHooks(&hooks{OnJoin: func(k string) { joined <- k }}))
		if err := c.Set(ctx, "k", "v1"); err != nil {
			t.Fatal(err)
		}
		noLoad := func(context.Context, string) (string, error) { return "", errors.New("loader called on a hit") }
		get := func(out chan<- getAnswer) {
			v, err := c.Get(ctx, "k", noLoad)
			out <- getAnswer{v, err}
		}
		first, second := make(chan getAnswer, 1), make(chan getAnswer, 1)
		go get(first)
		<-hold.held // the first Get's read is under way, alone
		go get(second)
		<-joined // the second Get shares it

		if err := c.Set(ctx, "k", "v2"); err != nil {
			t.Fatal(err)
		}
		// A Get after the write must not wait for the read that began
		// before it: with the first read held, joining it would run out the
		// deadline.
		late, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := c.Get(late, "k", noLoad)
		if err != nil || v != "v2" {
			t.Fatalf("Get after the write: %q, %v; want v2 from a read of its own", v, err)
		}
		close(hold.release)
		a, b := <-first, <-second
		if a.err != nil || b.err != nil || a.v != b.v {
			t.Fatalf("the shared read answered %q, %v and %q, %v; want one answer for both", a.v, a.err, b.v, b.err)
		}
		// The Get after the write may queue behind the second Get's read,
		// which was sent after the write; its answer is checked above.
	})
}

// panicOnce panics on its first Unmarshal.
type panicOnce struct{ done atomic.Bool }

func (p *panicOnce) Marshal(v any) ([]byte, error) { return json.Marshal(v) }
func (p *panicOnce) Unmarshal(b []byte, v any) error {
	if p.done.CompareAndSwap(false, true) {
		panic("codec panic")
	}
	return json.Unmarshal(b, v)
}

// A panic in a solo read (here the codec's) is the panicking caller's; a
// Get or a GetMany that shared the read is released and reads again.
func TestSoloReadPanicReleasesSharers(t *testing.T) {
	type item struct{ N int }
	sharers := map[string]func(ctx context.Context, c *Cache[item]) (item, error){
		"get": func(ctx context.Context, c *Cache[item]) (item, error) {
			return c.Get(ctx, "k", func(context.Context, string) (item, error) { return item{}, errors.New("loader called on a hit") })
		},
		"getmany": func(ctx context.Context, c *Cache[item]) (item, error) {
			out, err := c.GetMany(ctx, []string{"k"}, func(context.Context, []string) (map[string]item, error) {
				return nil, errors.New("batch loader called on a hit")
			})
			return out["k"], err
		},
	}
	for name, share := range sharers {
		t.Run(name, func(t *testing.T) {
			onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := context.Background()
				hold := newHeldGet(prefixFor(t), false)
				rdb.AddHook(hold)
				joined := make(chan string, 4)
				c := newCache[item](t, rdb, WithCodec(&panicOnce{}), withHooks(&hooks{OnJoin: func(k string) { joined <- k }}))
				if err := c.Set(ctx, "k", item{7}); err != nil {
					t.Fatal(err)
				}
				panicked := make(chan any, 1)
				go func() {
					defer func() { panicked <- recover() }()
					c.Get(ctx, "k", func(context.Context, string) (item, error) { return item{}, errors.New("loader called on a hit") })
				}()
				recvOr(t, hold.held, "the solo read")
				second := make(chan error, 1)
				go func() {
					v, err := share(ctx, c)
					if err == nil && v.N != 7 {
						err = fmt.Errorf("got %+v", v)
					}
					second <- err
				}()
				recvOr(t, joined, "the sharer joining")
				close(hold.release)
				if p := recvOr(t, panicked, "the panic"); p == nil {
					t.Fatal("the codec's panic did not reach the caller whose read it was")
				}
				if err := recvOr(t, second, "the sharer"); err != nil {
					t.Fatalf("the caller that shared the panicked read: %v; want the value from a read of its own", err)
				}
				checkFlightsIdle(t, c)
			})
		})
	}
}

// heldGet holds the first GET of a key under prefix: before sending it
// (after=false) or after its reply came back (after=true). If the caller's
// context ended while held, the GET fails with the context's error.
type heldGet struct {
	rt      *roundTrips
	after   bool
	taken   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func newHeldGet(prefix string, after bool) *heldGet {
	return &heldGet{rt: &roundTrips{prefix: prefix}, after: after, held: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldGet) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *heldGet) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "get" || !h.rt.ours(cmd) || !h.taken.CompareAndSwap(false, true) {
			return next(ctx, cmd)
		}
		return h.hold(ctx, func() error { return next(ctx, cmd) }, cmd.SetErr)
	}
}
func (h *heldGet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ours := slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return cmd.Name() == "get" && h.rt.ours(cmd) })
		if !ours || !h.taken.CompareAndSwap(false, true) {
			return next(ctx, cmds)
		}
		return h.hold(ctx, func() error { return next(ctx, cmds) }, func(err error) {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
		})
	}
}

// hold holds the taken GET (send sends it; fail fails it) as h says.
func (h *heldGet) hold(ctx context.Context, send func() error, fail func(error)) error {
	var err error
	if h.after {
		err = send()
	}
	close(h.held)
	<-h.release
	if h.after {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		fail(cerr)
		return cerr
	}
	return send()
}

// eventBound is how long a test waits for something that must happen
// before it fails instead of hanging: generous, since under -race beside
// busy loops on two cores a burst of 768 64 KB reads outlasts 10 s; no test
// asserts a speed with it.
const eventBound = 30 * time.Second

// recvOr receives from ch, failing the test past eventBound.
func recvOr[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(eventBound):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// checkFlightsIdle checks the flight table is empty and no solo read is marked.
func checkFlightsIdle[V any](t *testing.T, c *Cache[V]) {
	t.Helper()
	for _, busy := range busyFlightShards(c) {
		t.Error(busy)
	}
}

// busyFlightShards describes each shard of the flight table that holds a
// flight or marks a solo read.
func busyFlightShards[V any](c *Cache[V]) []string { return c.eng.Busy() }

func answeredCalls(s Stats) uint64 { return s.Hits + s.Misses + s.NullHits }

type getAnswer struct {
	v   string
	err error
}

// The solo reader's context ends mid-read: it gets its context error; a Get
// and a GetMany that adopted its read are not failed, they read again.
func TestSoloReaderCancelledSharersRetry(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hold := newHeldGet(prefixFor(t), false)
		rdb.AddHook(hold)
		joined := make(chan string, 8)
		c := newCache[string](t, rdb, withHooks(&hooks{OnJoin: func(k string) { joined <- k }}))
		if err := c.Set(ctx, "k", "v1"); err != nil {
			t.Fatal(err)
		}
		base := answeredCalls(c.Stats())
		noLoad := func(context.Context, string) (string, error) { return "", errors.New("loader called") }
		actx, cancel := context.WithCancel(ctx)
		a, b, m := make(chan getAnswer, 1), make(chan getAnswer, 1), make(chan getAnswer, 1)
		go func() { v, err := c.Get(actx, "k", noLoad); a <- getAnswer{v, err} }()
		recvOr(t, hold.held, "held")
		go func() { v, err := c.Get(ctx, "k", noLoad); b <- getAnswer{v, err} }()
		recvOr(t, joined, "join 1")
		go func() {
			out, err := c.GetMany(ctx, []string{"k"}, func(context.Context, []string) (map[string]string, error) {
				return nil, errors.New("batch loader called")
			})
			m <- getAnswer{out["k"], err}
		}()
		recvOr(t, joined, "join 2")
		cancel()
		close(hold.release)
		if r := recvOr(t, a, "a"); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("cancelled reader: %q, %v", r.v, r.err)
		}
		for name, ch := range map[string]chan getAnswer{"get": b, "getmany": m} {
			if r := recvOr(t, ch, name); r.err != nil || r.v != "v1" {
				t.Fatalf("%s sharer: %q, %v", name, r.v, r.err)
			}
		}
		if got := answeredCalls(c.Stats()) - base; got != 2 {
			t.Fatalf("hits+misses+nullhits = %d for 2 answered calls", got)
		}
		checkFlightsIdle(t, c)
	})
}

// A solo read that misses while a write lands during it: the sharer and the
// reader take the fill; a Get after the write reads on its own at once.
func TestSoloMissWriteDuringRead(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hold := newHeldGet(prefixFor(t), true)
		rdb.AddHook(hold)
		joined := make(chan string, 8)
		c := newCache[string](t, rdb, withHooks(&hooks{OnJoin: func(k string) { joined <- k }}))
		c.Delete(ctx, "k")
		var loads atomic.Int64
		load := func(context.Context, string) (string, error) { loads.Add(1); return "loaded", nil }
		a, b := make(chan getAnswer, 1), make(chan getAnswer, 1)
		go func() { v, err := c.Get(ctx, "k", load); a <- getAnswer{v, err} }()
		recvOr(t, hold.held, "held")
		go func() { v, err := c.Get(ctx, "k", load); b <- getAnswer{v, err} }()
		recvOr(t, joined, "join")
		if err := c.Set(ctx, "k", "v2"); err != nil {
			t.Fatal(err)
		}
		late, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if v, err := c.Get(late, "k", load); err != nil || v != "v2" {
			t.Fatalf("Get after write: %q, %v", v, err)
		}
		close(hold.release)
		ra, rb := recvOr(t, a, "a"), recvOr(t, b, "b")
		if ra.err != nil || rb.err != nil || ra.v != rb.v {
			t.Fatalf("a %q %v, b %q %v", ra.v, ra.err, rb.v, rb.err)
		}
		if got := answeredCalls(c.Stats()); got != 3 {
			t.Fatalf("hits+misses+nullhits = %d for 3 calls (%+v)", got, c.Stats())
		}
		// The Get after the write may queue behind b's read, which was
		// sent after the write; its answer is checked above.
		checkFlightsIdle(t, c)
	})
}

// A solo miss forgotten by a Delete, nobody sharing: the reader reads again
// and loads once; one call counted.
func TestSoloMissForgottenAlone(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hold := newHeldGet(prefixFor(t), true)
		rdb.AddHook(hold)
		c := newCache[string](t, rdb)
		var loads atomic.Int64
		load := func(context.Context, string) (string, error) { loads.Add(1); return "loaded", nil }
		c.Delete(ctx, "k")
		a := make(chan getAnswer, 1)
		go func() { v, err := c.Get(ctx, "k", load); a <- getAnswer{v, err} }()
		recvOr(t, hold.held, "held")
		if err := c.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		close(hold.release)
		if r := recvOr(t, a, "a"); r.err != nil || r.v != "loaded" {
			t.Fatalf("%q %v", r.v, r.err)
		}
		if loads.Load() != 1 {
			t.Fatalf("%d loads", loads.Load())
		}
		if got := answeredCalls(c.Stats()); got != 1 {
			t.Fatalf("hits+misses+nullhits = %d for 1 call (%+v)", got, c.Stats())
		}
		checkFlightsIdle(t, c)
	})
}

// An invalidation from another instance lands while a solo read (and a
// caller sharing it) holds the old value: neither admits it to the local
// tier, and a Get after the invalidation does not join the old read.
func TestSoloReadInvalidatedNotAdmitted(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hold := newHeldGet(prefixFor(t), true)
		got := make(chan []string, 8)
		joined := make(chan string, 8)
		w := localCache(t, rdb)
		r := localCache(t, rdb, withHooks(&hooks{OnInvalidate: func(k []string) { got <- k }, OnJoin: func(k string) { joined <- k }}))
		if err := w.Set(ctx, "k", "v1"); err != nil {
			t.Fatal(err)
		}
		// That write's invalidation reaches r too; were it to arrive during
		// the read below, the read would be passed and b would not queue.
		recvOr(t, got, "invalidation of v1")
		rdb.AddHook(hold)
		a, b := make(chan getAnswer, 1), make(chan getAnswer, 1)
		go func() { v, err := r.Get(ctx, "k", never(t)); a <- getAnswer{v, err} }()
		recvOr(t, hold.held, "held")
		go func() { v, err := r.Get(ctx, "k", never(t)); b <- getAnswer{v, err} }()
		recvOr(t, joined, "join")
		if err := w.Set(ctx, "k", "v2"); err != nil {
			t.Fatal(err)
		}
		recvOr(t, got, "invalidation")
		late, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if v, err := r.Get(late, "k", never(t)); err != nil || v != "v2" {
			t.Fatalf("Get after invalidation: %q %v", v, err)
		}
		close(hold.release)
		ra, rb := recvOr(t, a, "a"), recvOr(t, b, "b")
		// b queued behind a's read, not sharing it (nobody joins a read
		// already sent); the invalidation let it read on its own.
		if ra.err != nil || rb.err != nil || ra.v != "v1" || rb.v != "v2" {
			t.Fatalf("a %q %v, b %q %v", ra.v, ra.err, rb.v, rb.err)
		}
		for i := 0; i < 3; i++ {
			if v, err := r.Get(ctx, "k", never(t)); err != nil || v != "v2" {
				t.Fatalf("Get %d after all: %q %v (stale local admission?)", i, v, err)
			}
		}
		checkFlightsIdle(t, r)
	})
}
