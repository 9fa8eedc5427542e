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
	const delay = 500 * time.Millisecond
	due := clk.Now().Add(delay) // as the fake clock pins the server's
	var moved atomic.Bool
	sleep := func(at time.Time) {
		// Only the sleep until the delete is due; the clock stands still
		// until then.
		if at.Equal(due) && moved.CompareAndSwap(false, true) {
			clk.Advance(at.Sub(clk.Now())) // the clock reaches the wake time before the timer is set
		}
	}
	q := newQueue(t, rdb, withClock(clk), withHooks(hooks{afterDrain: w.hook, beforeSleep: sleep}))
	inv := newCounting(unlinkInvalidator{rdb.Unlink})
	users := register(t, q, "users", inv)
	// The pass the worker makes when it starts ends first, so that the one
	// delete recorded wakes the worker once, and nothing else does.
	w.wait(t, func() bool { return w.passes >= 1 }, "first pass")
	if err := q.record(ctx, users, newID(), entry{Keys: []string{"1"}}, delay); err != nil {
		t.Fatal(err)
	}
	w.waitSettled(t, 1)
	if !moved.Load() {
		t.Fatal("the worker never chose to sleep until the delete was due")
	}
	if n := inv.deleted("1"); n != 1 {
		t.Fatalf("key 1 deleted %d times, want 1", n)
	}
}
