package lock

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// goid returns the id of the calling goroutine (from its stack header).
func goid() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	f := bytes.Fields(buf[:n])
	if len(f) < 2 {
		return ""
	}
	return string(f[1])
}

// scriptGoroutine records the goroutine that sends each script call.
type scriptGoroutine struct{ last atomic.Value }

func (h *scriptGoroutine) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptGoroutine) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *scriptGoroutine) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			h.last.Store(goid())
		}
		return next(ctx, cmd)
	}
}

// TestSelfBoundedClientRunsInline: on a client with default options (no
// ContextTimeoutEnabled) but finite read and write timeouts, a call whose
// context can never end runs on the caller's goroutine (no hand-off), and
// against a frozen server it still returns, by the client's own timeouts,
// with an error matching ErrRedis and context.DeadlineExceeded. A call whose context can end, or on a
// lock with WithTimeout, is handed to a goroutine so that it returns by
// that bound.
func TestSelfBoundedClientRunsInline(t *testing.T) {
	s, _ := redistestSingle(t)
	const readTimeout = 200 * time.Millisecond
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: readTimeout, WriteTimeout: readTimeout, MaxRetries: -1})
	defer rdb.Close()
	hook := &scriptGoroutine{}
	rdb.AddHook(hook)
	c := newClient(t, rdb)
	ctx := context.Background()
	me := goid()

	h, err := c.Mutex("self-bounded").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := hook.last.Load(); g != me {
		t.Errorf("TryLock(Background) ran on goroutine %v, want the caller's %s", g, me)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if g := hook.last.Load(); g != me {
		t.Errorf("Unlock(Background) ran on goroutine %v, want the caller's %s", g, me)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, err = c.Mutex("self-bounded").TryLock(cctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := hook.last.Load(); g == me {
		t.Error("TryLock with a cancellable context ran on the caller's goroutine: it could not return at cancellation")
	}
	if err := h.Unlock(cctx); err != nil {
		t.Fatal(err)
	}
	timed := newClient(t, rdb, WithTimeout(time.Second))
	h, err = timed.Mutex("self-bounded").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := hook.last.Load(); g == me {
		t.Error("TryLock on a lock with WithTimeout ran on the caller's goroutine: it could not return by that bound")
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	f := freezer(t, s.Addr)
	f.freeze()
	defer f.resume()
	start := time.Now()
	_, err = c.Mutex("self-bounded-frozen").TryLock(ctx)
	if el := time.Since(start); el > 2*readTimeout+time.Second {
		t.Errorf("TryLock against a frozen server took %v; the client's timeouts allow %v", el, 2*readTimeout)
	}
	if !errors.Is(err, ErrRedis) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryLock against a frozen server: %v, want ErrRedis and context.DeadlineExceeded", err)
	}
}
