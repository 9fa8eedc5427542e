package lock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// unfencedTests runs the Mutex contract on the unfenced layout.
func unfencedTests(t *testing.T, rdb redis.UniversalClient) {
	t.Run("exclusive", func(t *testing.T) { testUnfencedExclusive(t, rdb) })
	t.Run("reentrant", func(t *testing.T) { testUnfencedReentrant(t, rdb) })
	t.Run("one command to take a free lock", func(t *testing.T) { testUnfencedCommands(t, rdb) })
	t.Run("woken by release", func(t *testing.T) { testUnfencedWoken(t, rdb) })
	t.Run("renewed and lost", func(t *testing.T) { testUnfencedRenewLost(t, rdb) })
	t.Run("layouts exclude each other", func(t *testing.T) { testUnfencedMixed(t, rdb) })
}

func testUnfencedExclusive(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	a, b := newClient(t, rdb, WithoutFencing()), newClient(t, rdb, WithoutFencing())
	h, err := a.Mutex("uf-excl").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Token() != 0 {
		t.Fatalf("unfenced token %d, want 0", h.Token())
	}
	h2, err := b.Mutex("uf-excl").TryLock(ctx)
	mustNotObtain(t, h2, err)
	if ttl, err := h.TTL(ctx); err != nil || ttl <= 0 || ttl > DefaultLease {
		t.Fatalf("TTL %v, %v", ttl, err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The stale handle cannot release the next holder's lock.
	h3, err := b.Mutex("uf-excl").TryLock(ctx)
	if err != nil {
		t.Fatalf("not free after unlock: %v", err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err) // a second Unlock of a handle is a no-op
	}
	if err := a.Mutex("uf-excl").b.release(ctx, h.Owner(), 0, true); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release by the former owner: %v, want ErrNotHeld", err)
	}
	h4, err := a.Mutex("uf-excl").TryLock(ctx)
	mustNotObtain(t, h4, err)
	if err := h3.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "cacheguard:lock:{uf-excl}").Result(); n != 0 {
		t.Fatal("an unfenced lock leaves its key after the last unlock")
	}
	// The fencing helpers never accept the token of an unfenced lock.
	if err := SetFenced(ctx, rdb, "res:{uf-excl}", h3.Token(), "v", time.Minute); !errors.Is(err, ErrFenced) {
		t.Fatalf("SetFenced with an unfenced token: %v, want ErrFenced", err)
	}
}

func testUnfencedReentrant(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c, other := newClient(t, rdb, WithoutFencing()), newClient(t, rdb)
	octx := ContextWithOwner(ctx, "job-1")
	h1, err := c.Mutex("uf-reent").Lock(octx)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := c.Mutex("uf-reent").TryLock(h1.Context())
	if err != nil {
		t.Fatalf("reentrant TryLock: %v", err)
	}
	// Another client presenting the same owner id shares the hold too.
	h3, err := other.Mutex("uf-reent", WithoutFencing()).TryLock(octx)
	if err != nil {
		t.Fatalf("same owner through another client: %v", err)
	}
	if v, _ := rdb.Get(ctx, "cacheguard:lock:{uf-reent}").Result(); v != "3:job-1" {
		t.Fatalf("lock value %q, want 3:job-1", v)
	}
	hx, err := other.Mutex("uf-reent", WithoutFencing()).TryLock(ContextWithOwner(ctx, "job-2"))
	mustNotObtain(t, hx, err)
	for i, h := range []*Handle{h3, h2} {
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		hx, err := other.Mutex("uf-reent", WithoutFencing()).TryLock(ctx)
		mustNotObtain(t, hx, err)
		if h1.Err() != nil {
			t.Fatalf("unlock %d ended the outer hold: %v", i, h1.Err())
		}
	}
	if err := h1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	h4, err := other.Mutex("uf-reent", WithoutFencing()).TryLock(ctx)
	if err != nil {
		t.Fatalf("not free after the last unlock: %v", err)
	}
	h4.Unlock(ctx)
}

// commandLog records the names of the commands a client sends.
type commandLog struct {
	off   atomic.Bool // hooks cannot be removed from a client: this stops the log
	mu    sync.Mutex
	names []string
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !l.off.Load() {
			l.mu.Lock()
			l.names = append(l.names, cmd.Name())
			l.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !l.off.Load() {
			l.mu.Lock()
			for _, c := range cmds {
				l.names = append(l.names, c.Name())
			}
			l.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func (l *commandLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.Join(l.names, " ")
	l.names = nil
	return s
}

// testUnfencedCommands pins what makes the layout fast: a free lock is
// taken with one plain SET, without a script.
func testUnfencedCommands(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb, WithoutFencing())
	m := c.Mutex("uf-cmds")
	var log commandLog
	rdb.AddHook(&log)
	defer log.off.Store(true)
	for i := 0; i < 3; i++ {
		log.take()
		h, err := m.TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := log.take(); got != "set" {
			t.Fatalf("taking a free lock sent %q, want one set", got)
		}
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if got := log.take(); got != "evalsha" && got != "evalsha eval" {
			t.Fatalf("release sent %q, want one script", got)
		}
	}
}

func testUnfencedWoken(t *testing.T, rdb redis.UniversalClient) {
	holder := newClient(t, rdb, WithoutFencing(), WithLease(time.Hour), WithoutWatchdog())
	waiterC := newClient(t, rdb, WithoutFencing(), WithBackoff(time.Hour, time.Hour))
	wokenByRelease(t, testCtx(t), holder, waiterC, hookWaiting(waiterC.engine), "uf-wake", "unfenced")
}

func testUnfencedRenewLost(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	c := newClient(t, rdb, WithoutFencing())
	renewed := make(chan error, 16)
	c.engine.wd.hookRenewed = func(id string, err error) {
		if id == "cacheguard:lock:{uf-renew}" {
			select {
			case renewed <- err:
			default:
			}
		}
	}
	h, err := c.Mutex("uf-renew", WithLease(300*time.Millisecond)).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := <-renewed; err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	if pttl, _ := rdb.PTTL(ctx, "cacheguard:lock:{uf-renew}").Result(); pttl <= 0 || pttl > 300*time.Millisecond {
		t.Fatalf("lease after renewals %v", pttl)
	}
	// Someone else's value: the next renewal finds the lock lost.
	rdb.Set(ctx, "cacheguard:lock:{uf-renew}", "1:intruder", time.Minute)
	waitDone(t, h.Context(), 10*time.Second, "lost lock")
	if !errors.Is(h.Err(), ErrLost) {
		t.Fatalf("Err %v, want ErrLost", h.Err())
	}
	if err := h.Extend(ctx, time.Second); !errors.Is(err, ErrLost) && !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Extend of a lost lock: %v", err)
	}
	if v, _ := rdb.Get(ctx, "cacheguard:lock:{uf-renew}").Result(); v != "1:intruder" {
		t.Fatalf("the lost holder touched the new value: %q", v)
	}
	rdb.Del(ctx, "cacheguard:lock:{uf-renew}")
}

// testUnfencedMixed: a client of either layout never takes a lock held in
// the other; it gets an error or a refusal.
func testUnfencedMixed(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	fenced, unfenced := newClient(t, rdb), newClient(t, rdb, WithoutFencing())
	h, err := fenced.Mutex("uf-mixed").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hx, err := unfenced.Mutex("uf-mixed").TryLock(ctx)
	if hx != nil || err == nil {
		t.Fatal("an unfenced client took a lock held by a fenced one")
	}
	h.Unlock(ctx)
	rdb.Del(ctx, "cacheguard:lock:{uf-mixed}") // the fenced layout keeps its counter
	h, err = unfenced.Mutex("uf-mixed").TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hx, err = fenced.Mutex("uf-mixed").TryLock(ctx)
	if hx != nil || err == nil {
		t.Fatal("a fenced client took a lock held by an unfenced one")
	}
	h.Unlock(ctx)
}
