package lock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testMultiAllOrNone: while another owner holds one lock, TryLock takes none
// (it gives back the one it took before), Lock waits holding none of them,
// and obtains all once that lock is released.
func testMultiAllOrNone(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	r := rig(t, WithBackoff(time.Millisecond, 20*time.Millisecond), WithLease(10*time.Second))
	w := hookWaiting(r.e)
	theirs, err := r.holder(1).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := r.ml.TryLock(ctx)
	mustNotObtain(t, hd, err)
	if held := r.heldParts(ctx); !slices.Equal(held, []int{1}) {
		t.Fatalf("after a refused TryLock, locks %v held, want only theirs [1]", held)
	}

	// A Lock whose context ends while it waits.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := r.ml.Lock(cctx); done <- err }()
	w.next(t, r.ml.b.name())
	cancel()
	if err := <-done; !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock: %v", err)
	}

	got := make(chan *Handle, 1)
	go func() {
		hd, err := r.ml.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- hd
	}()
	w.next(t, r.ml.b.name())
	if held := r.heldParts(ctx); !slices.Equal(held, []int{1}) {
		t.Fatalf("while Lock waits, locks %v held, want only theirs [1]", held)
	}
	if err := theirs.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	hd = <-got
	if hd == nil {
		t.FailNow()
	}
	if held := r.heldParts(ctx); len(held) != 3 {
		t.Fatalf("after Lock, locks %v held", held)
	}
	if hd.Token() != 0 {
		t.Fatalf("a MultiLock's Token = %d, want 0", hd.Token())
	}
	toks := hd.Tokens()
	if len(toks) != 3 || slices.Contains(toks, 0) {
		t.Fatalf("tokens %v", toks)
	}
	if v := hd.Validity(); v <= 0 || v > 10*time.Second {
		t.Fatalf("validity %v", v)
	}
	if ttl, err := hd.TTL(ctx); err != nil || ttl <= 0 || ttl > 10*time.Second {
		t.Fatalf("ttl %v %v", ttl, err)
	}
	hx, err := r.holder(2).TryLock(ctx)
	mustNotObtain(t, hx, err)
	if err := hd.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if held := r.heldParts(ctx); len(held) != 0 {
		t.Fatalf("after Unlock, locks %v held", held)
	}
}

// testMultiOverlap runs two MultiLocks over overlapping sets (locks 0,1,2
// and 2,1, given in the other order) from many goroutines: no lock is ever
// held twice and every goroutine finishes its rounds before the deadline.
func testMultiOverlap(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	r := rig(t, WithBackoff(time.Millisecond, 10*time.Millisecond))
	sets := []struct {
		ml  *MultiLock
		idx []int
	}{{r.ml, []int{0, 1, 2}}, {r.second(1, 2), []int{1, 2}}}
	var inUse [3]atomic.Int32
	var wg sync.WaitGroup
	const goroutines, rounds = 6, 15
	for g := range goroutines {
		s := sets[g%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				hd, err := s.ml.Lock(ctx)
				if err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				for _, i := range s.idx {
					if n := inUse[i].Add(1); n != 1 {
						t.Errorf("lock %d held by %d at once", i, n)
					}
				}
				for _, i := range s.idx {
					inUse[i].Add(-1)
				}
				if err := hd.Unlock(ctx); err != nil {
					t.Errorf("Unlock: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if held := r.heldParts(ctx); len(held) != 0 {
		t.Fatalf("locks %v still held", held)
	}
}

// testMultiReentrant: an owner that holds the MultiLock takes it again
// (one hold more on every lock, the same tokens), and only its last Unlock
// releases the locks.
func testMultiReentrant(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	r := rig(t)
	h1, err := r.ml.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := r.ml.TryLock(h1.Context())
	if err != nil {
		t.Fatalf("reentrant TryLock: %v", err)
	}
	if !slices.Equal(h1.Tokens(), h2.Tokens()) {
		t.Fatalf("tokens %v then %v", h1.Tokens(), h2.Tokens())
	}
	if err := h1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if held := r.heldParts(ctx); len(held) != 3 || h2.Err() != nil {
		t.Fatalf("after the first Unlock, locks %v held, Err %v", held, h2.Err())
	}
	if err := h2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if held := r.heldParts(ctx); len(held) != 0 {
		t.Fatalf("after the last Unlock, locks %v held", held)
	}
}

// testMultiWatchdog: the watchdog renews every lock past the lease.
func testMultiWatchdog(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	const lease = time.Second
	r := rig(t, WithLease(lease))
	renewed := make(chan error, 64)
	r.e.wd.hookRenewed = func(id string, err error) {
		if id == r.ml.b.id() {
			renewed <- err
		}
	}
	start := time.Now()
	hd, err := r.ml.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 { // a renewal every lease/3: the fourth goes out past the lease
		select {
		case err := <-renewed:
			if err != nil {
				t.Fatalf("renewal: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no renewal")
		}
	}
	if time.Since(start) <= lease {
		t.Fatalf("four renewals within the lease")
	}
	if err := hd.Err(); err != nil {
		t.Fatal(err)
	}
	if held := r.heldParts(ctx); len(held) != 3 {
		t.Fatalf("past the lease, locks %v held", held)
	}
	if err := hd.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testMultiLost: when one lock's key is deleted, the next renewal finds it
// gone and the handle's Context ends with ErrLost; Unlock releases the other
// locks and reports the lost one.
func testMultiLost(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	r := rig(t, WithLease(time.Second))
	hd, err := r.ml.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hctx := hd.Context()
	p := r.ml.b.parts[1]
	if err := p.rdb.Del(ctx, p.id()).Err(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, hctx, 10*time.Second, "a lost lock")
	// Found by the renewal, not left to expire.
	if cause := context.Cause(hctx); !errors.Is(cause, ErrLost) || !strings.Contains(cause.Error(), "key is gone") {
		t.Fatalf("cause %v", cause)
	}
	if err := hd.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Unlock after a lost lock: %v, want ErrNotHeld", err)
	}
	if held := r.heldParts(ctx); len(held) != 0 {
		t.Fatalf("after Unlock, locks %v held", held)
	}
}

// testMultiCancelled cancels the context before each lock in turn: the call
// fails with the context's error having given back every lock it took.
func testMultiCancelled(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	r := rig(t)
	var step atomic.Int32
	var cancel atomic.Pointer[context.CancelFunc]
	var before atomic.Bool // lock step-1 was held when step came
	r.e.hookMultiPart = func(i int) {
		if int32(i) == step.Load() {
			before.Store(i == 0 || r.held(ctx, i-1))
			(*cancel.Load())()
		}
	}
	for s := range 3 {
		for _, lock := range []func(*MultiLock, context.Context) (*Handle, error){(*MultiLock).TryLock, (*MultiLock).Lock} {
			step.Store(int32(s))
			cctx, c := context.WithCancel(ctx)
			cancel.Store(&c)
			hd, err := lock(r.ml, cctx)
			if err == nil {
				hd.Unlock(ctx)
				t.Fatalf("step %d: obtained with a cancelled context", s)
			}
			if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.Canceled) {
				t.Fatalf("step %d: %v", s, err)
			}
			if !before.Load() {
				t.Fatalf("step %d: lock %d was not held when the context ended", s, s-1)
			}
			if held := r.heldParts(ctx); len(held) != 0 {
				t.Fatalf("step %d: locks %v left held", s, held)
			}
		}
	}
}

// testMultiClose closes what runs the MultiLock between two locks of an
// attempt, and while a Lock waits: both calls return ErrClosed holding
// nothing, and no goroutine is left.
func testMultiClose(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	t.Run("between locks", func(t *testing.T) {
		r := rig(t)
		r.e.hookMultiPart = func(i int) {
			if i == 1 {
				r.close()
			}
		}
		hd, err := r.ml.TryLock(ctx)
		if !errors.Is(err, ErrClosed) {
			hd.Unlock(ctx)
			t.Fatalf("TryLock closed midway: %v", err)
		}
		if held := r.heldParts(ctx); len(held) != 0 {
			t.Fatalf("locks %v left held", held)
		}
	})
	t.Run("waiting", func(t *testing.T) {
		r := rig(t, WithBackoff(time.Millisecond, 20*time.Millisecond))
		w := hookWaiting(r.e)
		theirs, err := r.holder(2).TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer theirs.Unlock(ctx)
		done := make(chan error, 1)
		go func() { _, err := r.ml.Lock(ctx); done <- err }()
		w.next(t, r.ml.b.name())
		r.close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting Lock after Close: %v", err)
		}
		if held := r.heldParts(ctx); !slices.Equal(held, []int{2}) {
			t.Fatalf("locks %v held, want only theirs [2]", held)
		}
	})
	noGoroutines(t, "(*watchdog).loop")
	noGoroutines(t, "eachPart")
}
