package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// newClient returns a Client on rdb, closed when the test ends.
func newClient(t testing.TB, rdb redis.UniversalClient, opts ...Option) *Client {
	t.Helper()
	c, err := New(rdb, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testBound is how long a test may run before it fails instead of hanging.
// It is generous: under -race beside busy loops on two cores, the heaviest
// (3,000 contended increments from three processes, 1,000 waiters handed
// 1,000 locks) outlast 30 s; no test asserts a speed with it.
const testBound = 2 * time.Minute

// testCtx bounds a test's Redis calls so that a bug fails instead of hanging.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	t.Cleanup(cancel)
	return ctx
}

// fencedWrite is the protected resource of the tests: it accepts a write only
// with a fencing token higher than any it has seen, and logs the tokens it
// accepted. KEYS share a hash tag so it also runs on a cluster.
var fencedWrite = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
local tok = tonumber(ARGV[1])
if tok <= last then return 0 end
redis.call('HSET', KEYS[1], 'token', tok, 'value', ARGV[2])
redis.call('RPUSH', KEYS[2], tok)
return 1
`)

var resourceKeys = []string{"res:{fenced}", "res:{fenced}:log"}

func writeFenced(ctx context.Context, rdb redis.UniversalClient, token int64, value string) (bool, error) {
	n, err := fencedWrite.Run(ctx, rdb, resourceKeys, token, value).Int64()
	return n == 1, err
}

// waitDone waits for ctx to end, failing the test after d.
func waitDone(t testing.TB, ctx context.Context, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(d):
		t.Fatalf("%s: not signalled within %v", what, d)
	}
}

// waitingHook records, per lock name, how many Lock calls are blocked.
type waitingHook struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func hookWaiting(e *engine) *waitingHook {
	w := &waitingHook{ch: make(map[string]chan struct{})}
	e.hookWaiting = func(name string) { w.get(name) <- struct{}{} }
	return w
}

func (w *waitingHook) get(name string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch[name] == nil {
		w.ch[name] = make(chan struct{}, 1024)
	}
	return w.ch[name]
}

// next waits until a Lock on name is about to block.
func (w *waitingHook) next(t testing.TB, name string) {
	t.Helper()
	select {
	case <-w.get(name):
	case <-time.After(10 * time.Second):
		t.Fatalf("no waiter blocked on %q", name)
	}
}

func mustNotObtain(t testing.TB, h *Handle, err error) {
	t.Helper()
	if err == nil {
		h.Unlock(context.Background())
		t.Fatal("obtained a lock someone else holds")
	}
	if !errors.Is(err, ErrNotObtained) {
		t.Fatalf("err = %v, want ErrNotObtained", err)
	}
}

func redistestSingle(t testing.TB) (*redistest.Server, redis.UniversalClient) {
	return redistest.RealSingle(t)
}
