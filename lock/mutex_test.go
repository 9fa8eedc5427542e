package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func mutexTests(t *testing.T, rdb redis.UniversalClient) {
	t.Run("exclusive", func(t *testing.T) { testExclusive(t, rdb) })
	t.Run("fencing", func(t *testing.T) { testFencing(t, rdb) })
	t.Run("reentrant", func(t *testing.T) { testReentrant(t, rdb) })
	t.Run("double unlock", func(t *testing.T) { testDoubleUnlock(t, rdb) })
	t.Run("ttl and extend", func(t *testing.T) { testTTLExtend(t, rdb) })
	t.Run("extend a lost lock", func(t *testing.T) { testExtendLost(t, rdb) })
	t.Run("woken by release", func(t *testing.T) { testWokenByRelease(t, rdb) })
	t.Run("wait bounded by context", func(t *testing.T) { testWaitBounded(t, rdb) })
	t.Run("wait bounded by lease", func(t *testing.T) { testWaitBoundedByLease(t, rdb) })
}

func testExclusive(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	a, b := newClient(t, rdb), newClient(t, rdb)
	h, err := a.Mutex("excl").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Err() != nil {
		t.Fatalf("fresh handle Err = %v", h.Err())
	}
	h2, err := b.Mutex("excl").TryLock(ctx)
	mustNotObtain(t, h2, err)
	// Same client, no owner in the context: a different owner.
	h3, err := a.Mutex("excl").TryLock(ctx)
	mustNotObtain(t, h3, err)
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(h.Err(), ErrReleased) || !errors.Is(context.Cause(h.Context()), ErrReleased) {
		t.Fatalf("after unlock: Err %v, cause %v", h.Err(), context.Cause(h.Context()))
	}
	h4, err := b.Mutex("excl").TryLock(ctx)
	if err != nil {
		t.Fatalf("lock not free after unlock: %v", err)
	}
	h4.Unlock(ctx)
	if heldIn(ctx, rdb, "cacheguard:lock:{excl}") {
		t.Fatal("lock still held in Redis after the last unlock")
	}
	// What is left is the fencing counter, for at most the last lease.
	if l, ok := mutexIn(ctx, rdb, "cacheguard:lock:{excl}"); !ok || l.Token != h4.Token() || l.Owner != "" || l.Holds != 0 {
		t.Fatalf("released lock keeps %+v, want only the token %d", l, h4.Token())
	}
	if pttl, _ := rdb.PTTL(ctx, "cacheguard:lock:{excl}").Result(); pttl == -1 || pttl > DefaultLease {
		t.Fatalf("released lock's token kept for %v", pttl)
	}
}

func testFencing(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb)
	m := c.Mutex("fence")
	var last int64
	for i := 0; i < 5; i++ {
		h, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h.Token() <= last {
			t.Fatalf("token %d after %d", h.Token(), last)
		}
		last = h.Token()
		h.Unlock(ctx)
	}
}

func testReentrant(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c, other := newClient(t, rdb), newClient(t, rdb)
	m := c.Mutex("reent")
	octx := ContextWithOwner(ctx, "job-1")
	h1, err := m.Lock(octx)
	if err != nil {
		t.Fatal(err)
	}
	if h1.Owner() != "job-1" {
		t.Fatalf("owner %q", h1.Owner())
	}
	// The handle's context carries the owner: nested calls reenter.
	h2, err := m.TryLock(h1.Context())
	if err != nil {
		t.Fatalf("reentrant TryLock: %v", err)
	}
	if h2.Token() != h1.Token() {
		t.Fatalf("reentrant hold has token %d, first %d", h2.Token(), h1.Token())
	}
	// Another client presenting the same owner id shares the hold too.
	h3, err := other.Mutex("reent").TryLock(octx)
	if err != nil {
		t.Fatalf("same owner through another client: %v", err)
	}
	// A different owner does not get in.
	hx, err := other.Mutex("reent").TryLock(ContextWithOwner(ctx, "job-2"))
	mustNotObtain(t, hx, err)
	if l, _ := mutexIn(ctx, rdb, "cacheguard:lock:{reent}"); l.Holds != 3 {
		t.Fatalf("hold count %d, want 3", l.Holds)
	}
	for i, h := range []*Handle{h3, h2} {
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		hx, err := other.Mutex("reent").TryLock(ctx)
		mustNotObtain(t, hx, err)
		if h1.Err() != nil || h1.Context().Err() != nil {
			t.Fatalf("unlock %d ended the outer hold: %v", i, h1.Err())
		}
	}
	if err := h1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	h4, err := other.Mutex("reent").TryLock(ctx)
	if err != nil {
		t.Fatalf("not free after the last unlock: %v", err)
	}
	h4.Unlock(ctx)
}

func testDoubleUnlock(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb)
	m := c.Mutex("double")
	octx := ContextWithOwner(ctx, "w")
	outer, err := m.Lock(octx)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := m.Lock(octx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := inner.Unlock(ctx); err != nil {
			t.Fatalf("unlock %d: %v", i, err)
		}
	}
	// The repeated unlocks of inner did not eat outer's hold.
	hx, err := newClient(t, rdb).Mutex("double").TryLock(ctx)
	mustNotObtain(t, hx, err)
	if l, _ := mutexIn(ctx, rdb, "cacheguard:lock:{double}"); l.Holds != 1 {
		t.Fatalf("hold count %d, want 1", l.Holds)
	}
	outer.Unlock(ctx)
	if err := outer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := (*Handle)(nil).Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("nil handle unlock: %v", err)
	}
}

func testTTLExtend(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb)
	h, err := c.Mutex("ttl", WithLease(10*time.Second), WithoutWatchdog()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock(ctx)
	ttl, err := h.TTL(ctx)
	if err != nil || ttl <= 9*time.Second || ttl > 10*time.Second {
		t.Fatalf("ttl %v, %v", ttl, err)
	}
	if v := h.Validity(); v <= 9*time.Second || v > 10*time.Second {
		t.Fatalf("validity %v", v)
	}
	if err := h.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	ttl, _ = h.TTL(ctx)
	if ttl <= 59*time.Second {
		t.Fatalf("ttl after extend %v", ttl)
	}
	if v := h.Validity(); v <= 59*time.Second {
		t.Fatalf("validity after extend %v", v)
	}
	if err := h.Extend(ctx, time.Millisecond); err == nil {
		t.Fatal("accepted a 1ms lease")
	}
	h.Unlock(ctx)
	if _, err := h.TTL(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("ttl after unlock: %v", err)
	}
	if err := h.Extend(ctx, time.Minute); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extend after unlock: %v", err)
	}
}

// testWokenByRelease pins that a waiter is woken by the release notification:
// its backoff and the holder's lease are both far longer than the test.
func testWokenByRelease(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	holder := newClient(t, rdb)
	waiterC := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	held, woken := wokenByRelease(t, ctx, holder, waiterC, hookWaiting(waiterC.engine), "wake", "mutex", WithLease(time.Hour), WithoutWatchdog())
	if woken <= held {
		t.Fatalf("waiter token %d, holder %d", woken, held)
	}
}

func testWaitBounded(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb)
	h, err := c.Mutex("bounded").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock(ctx)
	hook := hookWaiting(c.engine)
	wctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := c.Mutex("bounded").Lock(wctx)
		got <- err
	}()
	hook.next(t, "bounded")
	cancel()
	err = <-got
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrNotObtained and context.Canceled", err)
	}
	dctx, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	_, err = c.Mutex("bounded").Lock(dctx)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
}

// testWaitBoundedByLease: a holder that never releases (here: its release
// is a plain key expiry, which announces nothing) costs a waiter no more than
// the remaining lease, even with an hour-long backoff.
func testWaitBoundedByLease(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	holder := newClient(t, rdb)
	waiterC := newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	h, err := holder.Mutex("expiring", WithLease(200*time.Millisecond), WithoutWatchdog()).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := waiterC.Mutex("expiring").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Unlock(ctx)
	if h2.Token() <= h.Token() {
		t.Fatalf("token %d after %d", h2.Token(), h.Token())
	}
}

func TestBadInput(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	if _, err := New(nil); !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrInvalidOption) {
		t.Fatalf("New(nil): %v, want ErrInvalidArgument", err)
	}
	for _, opt := range []Option{
		WithPrefix("a{b"), WithLease(0), WithLease(time.Millisecond),
		WithBackoff(0, 1), WithBackoff(2, 1), WithDriftFactor(0.7), WithNodeTimeout(0), WithTimeout(0),
	} {
		if _, err := New(rdb, opt); !errors.Is(err, ErrInvalidOption) {
			t.Fatalf("New with a bad option: %v, want ErrInvalidOption", err)
		}
	}
	// A nil Option is ignored; a nil logger stands for slog.Default().
	if _, err := New(rdb, nil, WithLogger(nil)); err != nil {
		t.Fatalf("New(nil option, WithLogger(nil)): %v", err)
	}
	c := newClient(t, rdb)
	for _, name := range []string{"", "}x", "a}b"} {
		if _, err := c.Mutex(name).TryLock(ctx); !errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrNotObtained) {
			t.Fatalf("name %q: err %v", name, err)
		}
		if _, err := c.RWMutex(name).RLock(ctx); err == nil {
			t.Fatalf("rw name %q accepted", name)
		}
	}
	if _, err := c.Mutex("x", WithLease(-1), WithoutWatchdog()).Lock(ctx); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("bad per-lock option: %v, want ErrInvalidOption", err)
	}
	if _, err := c.Semaphore("s", 0).TryAcquire(ctx, 1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("semaphore of size 0: %v, want ErrInvalidArgument", err)
	}
	if _, err := NewRedlock(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("NewRedlock(nil): %v, want ErrInvalidArgument", err)
	}
	if _, err := NewRedlock([]redis.UniversalClient{nil}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("NewRedlock with a nil node: %v, want ErrInvalidArgument", err)
	}
}
