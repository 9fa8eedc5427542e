package lock

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

const roleSemaphore = "semaphore"

func semaphoreTests(t *testing.T, rdb redis.UniversalClient) {
	t.Run("permits", func(t *testing.T) { testSemaphorePermits(t, rdb) })
	t.Run("killed holder's permits come back", func(t *testing.T) { testSemaphoreKilledHolder(t, rdb) })
}

// testSemaphorePermits: no more than size permits are out; a waiter is woken
// by a release.
func testSemaphorePermits(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	a, b := newClient(t, rdb), newClient(t, rdb, WithBackoff(time.Hour, time.Hour))
	hook := hookWaiting(b.engine)
	two, err := a.Semaphore("sem", 3).TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Semaphore("sem", 3).TryAcquire(ctx, 2); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("took 2 more permits of 3: %v", err)
	}
	one, err := b.Semaphore("sem", 3).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Semaphore("sem", 3).TryAcquire(ctx, 4); err == nil {
		t.Fatal("took more permits than the size")
	}
	got := make(chan error, 1)
	go func() {
		h, err := b.Semaphore("sem", 3).Acquire(ctx, 2)
		if err == nil {
			err = h.Unlock(ctx)
		}
		got <- err
	}()
	hook.next(t, "sem")
	if err := two.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // the waiter backs off for an hour: only the notification wakes it
		t.Fatal("waiter not woken by the release")
	}
	if err := one.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testSemaphoreKilledHolder: a process holding 2 of 3 permits is killed
// (SIGKILL); its permits come back within their lease, so all 3 can be
// taken.
func testSemaphoreKilledHolder(t *testing.T, rdb redis.UniversalClient) {
	ctx := testCtx(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestTopologies$", "-test.count=1")
	cmd.Env = append(os.Environ(), redistest.ChildEnv+"=0", envRole+"="+roleSemaphore,
		envAddrs+"="+redistest.Spec(rdb))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("child output:\n%s", out.String())
		}
	}()
	defer rdb.Del(ctx, readyKey, renewedKey)
	if _, err := rdb.BLPop(ctx, 20*time.Second, readyKey).Result(); err != nil {
		t.Fatalf("child never took its permits: %v", err)
	}
	if _, err := rdb.BLPop(ctx, 20*time.Second, renewedKey).Result(); err != nil {
		t.Fatalf("child never renewed: %v", err)
	}
	c := newClient(t, rdb)
	if _, err := c.Semaphore("sem-killed", 3).TryAcquire(ctx, 2); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("the child's permits are free before the kill: %v", err)
	}
	cmd.Process.Kill()
	h, err := c.Semaphore("sem-killed", 3).Acquire(ctx, 3)
	if err != nil {
		t.Fatalf("the killed holder's permits never came back: %v", err)
	}
	h.Unlock(ctx)
}

func semaphoreChild(t *testing.T) {
	rdb := clientFromEnv(t)
	c := newClient(t, rdb, WithLease(killLease))
	ctx := context.Background()
	c.wd.hookRenewed = func(_ string, err error) {
		if err == nil {
			rdb.RPush(ctx, renewedKey, 1)
		}
	}
	h, err := c.Semaphore("sem-killed", 3).Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	rdb.RPush(ctx, readyKey, 1)
	select {
	case <-h.Context().Done():
		t.Fatalf("child lost its permits: %v", context.Cause(h.Context()))
	case <-time.After(30 * time.Second):
	}
}
