package stock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A cancelled context ends every call with its error and changes nothing;
// Run (which starts no goroutine of its own) returns when its context ends;
// Unload waits for the outbox to drain and then leaves no key behind.
func TestCancelAndUnload(t *testing.T) {
	rdb := sharedSingle(t)
	inv := newInv(t, rdb)
	load(t, inv, "sku", 3)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := inv.Reserve(done, "sku", "u", "r", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("reserve: %v", err)
	}
	if _, err := inv.Release(done, "sku", "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("release: %v", err)
	}
	if st := mustStatus(t, inv, "sku"); st.Remaining != 3 {
		t.Fatalf("status %+v", st)
	}
	ctx := context.Background()
	inv.Reserve(ctx, "sku", "u", "r", 1)
	store := newSQLite(t)
	c := newConsumer(t, inv, store)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error)
	go func() { ran <- c.Run(runCtx) }()
	// Unload refuses until the consumer has taken the reservation.
	for {
		err := inv.Unload(ctx, "sku", "")
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotDrained) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // waiting for the consumer's pass
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if len(ordersByID(t, store, "sku")) != 1 {
		t.Fatal("reservation not applied before the unload")
	}
	if _, err := inv.Status(ctx, "sku"); !errors.Is(err, ErrNoSale) {
		t.Fatalf("status after unload: %v", err)
	}
	if n, _ := rdb.Exists(ctx, inv.keys("sku", 0).list()...).Result(); n != 0 {
		t.Fatalf("%d keys left", n)
	}
}
