package consistency

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// The clock moves between the worker choosing when to look next and setting
// its timer (on a loaded machine, or while a test advances a fake clock):
// the timer still fires when the clock reaches the chosen time, not that
// long after the moment it was set, so the delete is not held back.
func TestWorkerWakesAtChosenTimeAfterClockMoved(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.SharedSingle(t)
	clk := newFakeClock()
	w := newDrainWatch()
	var armed atomic.Bool
	sleep := func(at time.Time) {
		if armed.CompareAndSwap(true, false) {
			clk.Advance(at.Sub(clk.Now())) // the clock reaches the wake time before the timer is set
		}
	}
	q := newQueue(t, rdb, withClock(clk), WithDelay(500*time.Millisecond),
		withHooks(hooks{afterDrain: w.hook, beforeSleep: sleep}))
	inv := newCounting(unlinkInvalidator{rdb.Unlink})
	users := register(t, q, "users", inv)
	armed.Store(true)
	if err := users.Update(ctx, []string{"1"}, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	w.waitSettled(t, 1)
	if n := inv.deleted("1"); n != 2 {
		t.Fatalf("key 1 deleted %d times, want 2 (the first delete and the second)", n)
	}
}
