//go:build unix

package call_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

var errTimeout = kind.Redis("calltest")

// frozen starts a server, connects a client with go-redis defaults
// (ContextTimeoutEnabled off: go-redis ignores deadlines while it reads a
// reply), warms one connection, and freezes the server.
func frozen(t *testing.T, opt redis.Options) *redis.Client {
	t.Helper()
	s := redistest.Start(t)
	opt.Addr = s.Addr
	rdb := redis.NewClient(&opt)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	s.Freeze()
	t.Cleanup(s.Thaw) // before the cleanups registered earlier: the server stops thawed
	return rdb
}

// TestDoReturnsByTheDeadline: on a default client against a frozen server,
// a call returns soon after its context's deadline (or its Strict limit) with an
// error matching ErrAbandoned and context.DeadlineExceeded (and the RedisAs
// error for a limit); its late outcome goes to abandon, counted in the
// Flight until it comes.
func TestDoReturnsByTheDeadline(t *testing.T) {
	rdb := frozen(t, redis.Options{ReadTimeout: time.Second, MaxRetries: -1})
	var f call.Flight
	b := call.For(rdb).Counting(&f).RedisAs(errTimeout)
	const budget, margin = 200 * time.Millisecond, 300 * time.Millisecond
	var abandoned atomic.Int32
	ping := func(b call.Bound, ctx context.Context, limit time.Duration) error {
		_, err := call.Do(b, ctx, limit, func(ctx context.Context) (string, error) {
			return rdb.Ping(ctx).Result()
		}, func(string, error) { abandoned.Add(1) })
		return err
	}
	redistest.CheckBounded(t, "a call with a deadline", budget, margin, func(ctx context.Context) error {
		return ping(b, ctx, 0)
	}, call.ErrAbandoned, context.DeadlineExceeded)
	// Without Strict the client's own timeouts would be the bound here.
	redistest.CheckBounded(t, "a call with a limit", budget, margin, func(context.Context) error {
		return ping(b.Strict(), context.Background(), budget)
	}, call.ErrAbandoned, errTimeout, context.DeadlineExceeded)
	if f.Wait(10 * time.Millisecond) {
		t.Fatal("Flight counts no abandoned call")
	}
	if !f.Wait(5 * time.Second) {
		t.Fatal("abandoned calls still running after the client's read timeout")
	}
	if n := abandoned.Load(); n != 2 {
		t.Fatalf("abandon called %d times, want 2", n)
	}
}

// TestDoInline: a call runs on the caller's goroutine on a client that
// applies context deadlines, and on a client with finite timeouts when its
// context can never end and its limit is not Strict; otherwise it is handed
// off.
func TestDoInline(t *testing.T) {
	s := redistest.Start(t)
	ctxClient := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
	defClient := redis.NewClient(&redis.Options{Addr: s.Addr})
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": s.Addr}})
	defer ctxClient.Close()
	defer defClient.Close()
	defer ring.Close()
	bg := context.Background()
	dl, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	cases := []struct {
		name   string
		b      call.Bound
		ctx    context.Context
		inline bool
	}{
		{"context-aware client, deadline", call.For(ctxClient), dl, true},
		{"default client, deadline", call.For(defClient), dl, false},
		{"default client, no deadline", call.For(defClient), bg, true},
		{"default client, no deadline, strict", call.For(defClient).Strict(), bg, false},
		{"default client, detached after the caller left", call.For(defClient), call.Detached(bg, true), false},
		{"ring, no deadline", call.For(ring), bg, false},
		{"mixed clients", call.For(ctxClient, defClient), dl, false},
	}
	for _, c := range cases {
		var f call.Flight
		var counted bool
		_, err := call.Do(c.b.Counting(&f), c.ctx, time.Minute, func(context.Context) (int, error) {
			counted = !f.Wait(0)
			return 0, nil
		}, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if counted == c.inline {
			t.Errorf("%s: handed off = %v, want %v", c.name, counted, !c.inline)
		}
	}
}

// TestDetached: a call on a Detached context goes on after the caller's
// context ends, and its outcome reaches abandon.
func TestDetached(t *testing.T) {
	s := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	release, got := make(chan struct{}), make(chan error, 1)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := call.Do(call.For(rdb), call.Detached(ctx, false), time.Minute, func(ctx context.Context) (string, error) {
		<-release
		return rdb.Set(ctx, "detached", "1", 0).Result()
	}, func(_ string, err error) { got <- err })
	if !errors.Is(err, call.ErrAbandoned) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrAbandoned and context.Canceled", err)
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("the detached call failed: %v", err)
	}
	if v, err := rdb.Get(context.Background(), "detached").Result(); err != nil || v != "1" {
		t.Fatalf("GET = %q, %v: the detached call did not run", v, err)
	}
}

// TestErrEndedContext: a call whose context has already ended is not sent.
func TestErrEndedContext(t *testing.T) {
	s := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := call.Err(call.For(rdb), ctx, 0, func(context.Context) error { ran = true; return nil })
	if ran || !errors.Is(err, context.Canceled) || !errors.Is(err, call.ErrAbandoned) {
		t.Fatalf("ran = %v, err = %v", ran, err)
	}
}

// TestRedisAsWrapsFailuresOnly: with RedisAs, a call that Redis fails
// matches the sentinel; redis.Nil and the caller's own context error come
// back as they are.
func TestRedisAsWrapsFailuresOnly(t *testing.T) {
	s := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	b := call.For(rdb).RedisAs(errTimeout)
	get := func(ctx context.Context, cmd func(context.Context) error) error {
		return call.Err(b, ctx, 0, cmd)
	}
	ctx := context.Background()
	if err := get(ctx, func(ctx context.Context) error { return rdb.Get(ctx, "missing").Err() }); err != redis.Nil {
		t.Errorf("GET of a missing key: %v, want redis.Nil as it is", err)
	}
	if err := get(ctx, func(ctx context.Context) error { return rdb.Do(ctx, "NOSUCHCOMMAND").Err() }); !errors.Is(err, errTimeout) || call.TimedOut(ctx, err) {
		t.Errorf("an error reply: %v, want the sentinel", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := get(cctx, func(ctx context.Context) error { return rdb.Ping(ctx).Err() }); errors.Is(err, errTimeout) || !errors.Is(err, context.Canceled) {
		t.Errorf("the caller's cancelled context: %v, want context.Canceled alone", err)
	}
	s.Kill()
	if err := get(ctx, func(ctx context.Context) error { return rdb.Ping(ctx).Err() }); !errors.Is(err, errTimeout) {
		t.Errorf("a stopped server: %v, want the sentinel", err)
	}
}

// TestCallersDeadlineIsNotARedisFailure: on a ContextTimeoutEnabled client
// the caller's deadline cuts the read as a network timeout, on the caller's
// goroutine; that is the caller's context ending, not a failure of Redis.
// A limit of the Bound's own that runs out is one.
func TestCallersDeadlineIsNotARedisFailure(t *testing.T) {
	rdb := frozen(t, redis.Options{ContextTimeoutEnabled: true, MaxRetries: -1})
	b := call.For(rdb).RedisAs(errTimeout)
	ping := func(ctx context.Context, limit time.Duration) error {
		return call.Err(b, ctx, limit, func(ctx context.Context) error { return rdb.Ping(ctx).Err() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := ping(ctx, 0); errors.Is(err, errTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the caller's deadline: %v, want context.DeadlineExceeded alone", err)
	}
	if err := ping(context.Background(), 100*time.Millisecond); !errors.Is(err, errTimeout) || !call.TimedOut(context.Background(), err) {
		t.Errorf("the Bound's own limit: %v, want the sentinel, timed out", err)
	}
}
