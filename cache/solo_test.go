package cache

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// holdFirstGet holds the first GET of a key under prefix until release is
// closed, and signals held when it has it.
type holdFirstGet struct {
	rt      *roundTrips
	taken   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func newHoldFirstGet(prefix string) *holdFirstGet {
	return &holdFirstGet{rt: &roundTrips{prefix: prefix}, held: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdFirstGet) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdFirstGet) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" && h.rt.ours(cmd) && h.taken.CompareAndSwap(false, true) {
			close(h.held)
			<-h.release
		}
		return next(ctx, cmd)
	}
}
func (h *holdFirstGet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Get alone on its key reads without a flight; a caller that arrives
// during that read shares it, but a caller that arrives after a write of the
// key does not: it reads on its own and sees the write.
func TestSoloReadSharedUntilAWrite(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hold := newHoldFirstGet(prefixFor(t))
		rdb.AddHook(hold)
		joined := make(chan string, 4)
		c := newCache[string](t, rdb, withHooks(&hooks{onJoin: func(k string) { joined <- k }}))
		if err := c.Set(ctx, "k", "v1"); err != nil {
			t.Fatal(err)
		}
		noLoad := func(context.Context, string) (string, error) { return "", errors.New("loader called on a hit") }
		type answer struct {
			v   string
			err error
		}
		get := func(out chan<- answer) {
			v, err := c.Get(ctx, "k", noLoad)
			out <- answer{v, err}
		}
		first, second := make(chan answer, 1), make(chan answer, 1)
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
		if n := len(joined); n != 0 {
			t.Fatalf("%d more calls joined a read, want only the second Get", n)
		}
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
// caller that shared the read is released and reads again.
func TestSoloReadPanicReleasesSharers(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		hold := newHoldFirstGet(prefixFor(t))
		rdb.AddHook(hold)
		joined := make(chan string, 4)
		type item struct{ N int }
		c := newCache[item](t, rdb, WithCodec(&panicOnce{}), withHooks(&hooks{onJoin: func(k string) { joined <- k }}))
		if err := c.Set(ctx, "k", item{7}); err != nil {
			t.Fatal(err)
		}
		noLoad := func(context.Context, string) (item, error) { return item{}, errors.New("loader called on a hit") }
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			c.Get(ctx, "k", noLoad)
		}()
		<-hold.held
		second := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			v, err := c.Get(wctx, "k", noLoad)
			if err == nil && v.N != 7 {
				err = errors.New("wrong value")
			}
			second <- err
		}()
		<-joined
		close(hold.release)
		if p := <-panicked; p == nil {
			t.Fatal("the codec's panic did not reach the caller whose read it was")
		}
		if err := <-second; err != nil {
			t.Fatalf("the caller that shared the panicked read: %v; want the value from a read of its own", err)
		}
	})
}
