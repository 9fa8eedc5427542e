package lock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/apicheck"
	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestRedisGoneContract: with Redis gone, every call fails with an error
// matching ErrRedis that names the prefix once, and a
// renewal the watchdog fails reaches WithErrorHandler.
func TestRedisGoneContract(t *testing.T) {
	s := redistest.Start(t)
	rdb := redistest.FastFail(t, s.Addr)
	var mu sync.Mutex
	var handled []error
	c := newClient(t, rdb, WithLease(600*time.Millisecond), WithErrorHandler(func(err error) {
		mu.Lock()
		handled = append(handled, err)
		mu.Unlock()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := c.Mutex("contract-held").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Kill()

	_, err = c.Mutex("contract-try").TryLock(ctx)
	apicheck.RedisFailure(t, ErrRedis, "Mutex.TryLock", err)
	_, err = c.RWMutex("contract-rw").TryRLock(ctx)
	apicheck.RedisFailure(t, ErrRedis, "RWMutex.TryRLock", err)
	_, err = c.Semaphore("contract-sem", 2).TryAcquire(ctx, 1)
	apicheck.RedisFailure(t, ErrRedis, "Semaphore.TryAcquire", err)
	_, err = h.TTL(ctx)
	apicheck.RedisFailure(t, ErrRedis, "Handle.TTL", err)
	apicheck.RedisFailure(t, ErrRedis, "SetFenced", SetFenced(ctx, rdb, "contract-res", 1, "v", 0))

	// The watchdog renews every third of the lease; its failure is handed
	// over as well as logged.
	<-h.Context().Done()
	mu.Lock()
	defer mu.Unlock()
	if len(handled) == 0 {
		t.Fatal("a failed renewal did not reach WithErrorHandler")
	}
	apicheck.RedisFailure(t, ErrRedis, "renewal (WithErrorHandler)", handled[0])
}

// TestOptionsOfOtherConstructorsAreRefused: an option given to a
// constructor it does not configure is an error wrapping ErrInvalidOption,
// not ignored; given to one it configures, it is taken.
func TestOptionsOfOtherConstructorsAreRefused(t *testing.T) {
	_, rdb := redistestSingle(t)
	ctx := testCtx(t)
	if _, err := New(rdb, WithNodeTimeout(time.Second)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("New(WithNodeTimeout): %v, want ErrInvalidOption", err)
	}
	if _, err := NewRedlock([]redis.UniversalClient{rdb}, WithoutFencing()); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("NewRedlock(WithoutFencing): %v, want ErrInvalidOption", err)
	}
	c := newClient(t, rdb)
	for name, try := range map[string]func() error{
		"Semaphore(WithoutFencing)": func() error { _, err := c.Semaphore("s", 1, WithoutFencing()).TryAcquire(ctx, 1); return err },
		"RWMutex(WithoutFencing)":   func() error { _, err := c.RWMutex("rw", WithoutFencing()).TryLock(ctx); return err },
		"Mutex(WithLogger)":         func() error { _, err := c.Mutex("m", WithLogger(nil)).TryLock(ctx); return err },
		"Mutex(WithNodeTimeout)":    func() error { _, err := c.Mutex("m", WithNodeTimeout(time.Second)).TryLock(ctx); return err },
	} {
		if err := try(); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "configures") {
			t.Errorf("%s: %v, want ErrInvalidOption saying what it configures", name, err)
		}
	}
	r, err := NewRedlock([]redis.UniversalClient{rdb}, WithNodeTimeout(time.Second), WithErrorHandler(func(error) {}))
	if err != nil {
		t.Fatalf("NewRedlock with its own options: %v", err)
	}
	defer r.Close()
	h, err := r.Mutex("rl", WithNodeTimeout(time.Second)).TryLock(ctx)
	if err != nil {
		t.Fatalf("Redlock.Mutex(WithNodeTimeout): %v", err)
	}
	h.Unlock(ctx)
}
