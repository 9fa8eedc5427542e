package lock

import (
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// TestWaiterFollowsSlotMigration: a waiter subscribed (SSUBSCRIBE) on the
// master that owns its lock's slot is still woken by the release after the
// slot moved to another master. Its backoff is set far beyond the test's
// bound, so only the notification can wake it in time.
func TestWaiterFollowsSlotMigration(t *testing.T) {
	cl, rdb := redistest.StartCluster(t)
	ctx := testCtx(t)
	holder := newClient(t, rdb)
	waiter := newClient(t, cl.Client(), WithBackoff(time.Minute, time.Minute))
	blocked := make(chan struct{}, 16)
	waiter.hookWaiting = func(string) { blocked <- struct{}{} }

	h, err := holder.Mutex("mig").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		h2, err := waiter.Mutex("mig").Lock(ctx)
		if err == nil {
			err = h2.Unlock(ctx)
		}
		got <- err
	}()
	<-blocked // subscribed, registered, refused

	slot, err := rdb.ClusterKeySlot(ctx, "cacheguard:lock:{mig}").Result()
	if err != nil {
		t.Fatal(err)
	}
	owner, err := cl.MigrateSlot(ctx, int(slot), 0)
	if err != nil {
		t.Fatal(err)
	}
	if owner == 0 {
		if _, err := cl.MigrateSlot(ctx, int(slot), 1); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("woken %v after the release", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken within 5s of the release after its slot moved")
	}
}
