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

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

// multiRig is a MultiLock of three locks under test, with what the tests
// need to look at each lock from outside.
type multiRig struct {
	ml *MultiLock
	e  *engine // runs ml: its hooks
	// holder returns a Mutex of another owner (another Client) on lock i.
	holder func(i int) *Mutex
	// second returns a MultiLock of another Client over the locks idx.
	second func(idx ...int) *MultiLock
	close  func() // closes what runs ml
}

type newRig func(t *testing.T, opts ...Option) *multiRig

// held reports whether lock i of r is held in Redis.
func (r *multiRig) held(ctx context.Context, i int) bool {
	p := r.ml.b.parts[i]
	return heldIn(ctx, p.rdb, p.id())
}

func (r *multiRig) heldParts(ctx context.Context) (held []int) {
	for i := range r.ml.b.parts {
		if r.held(ctx, i) {
			held = append(held, i)
		}
	}
	return held
}

// clientRig makes MultiLocks of three names on one Redis (Client.MultiLock):
// on a cluster each lock is in a slot of its own.
func clientRig(rdb redis.UniversalClient) newRig {
	return func(t *testing.T, opts ...Option) *multiRig {
		c, other := newClient(t, rdb), newClient(t, rdb)
		base := redistest.Name(t)
		// Given out of order: taken sorted.
		ml := c.MultiLock([]string{base + ":c", base + ":a", base + ":b", base + ":a"}, opts...)
		names := ml.Names()
		if want := []string{base + ":a", base + ":b", base + ":c"}; !slices.Equal(names, want) {
			t.Fatalf("names %q, want %q", names, want)
		}
		if cl, ok := rdb.(*redis.ClusterClient); ok {
			// Each lock in a slot of its own.
			slots := map[int64]bool{}
			for _, p := range ml.b.parts {
				slots[cl.ClusterKeySlot(testCtx(t), p.id()).Val()] = true
			}
			if len(slots) != len(names) {
				t.Fatalf("%d locks in %d slots", len(names), len(slots))
			}
		}
		return &multiRig{
			ml: ml, e: c.engine,
			holder: func(i int) *Mutex { return other.Mutex(names[i]) },
			second: func(idx ...int) *MultiLock {
				var ns []string
				for _, i := range slices.Backward(idx) {
					ns = append(ns, names[i])
				}
				return other.MultiLock(ns, opts...)
			},
			close: func() { c.Close() },
		}
	}
}

// nodesRig makes MultiLocks (NewMultiLock) of one name on each of three
// independent masters.
func nodesRig(nodes []*redistest.Server) newRig {
	return func(t *testing.T, opts ...Option) *multiRig {
		cs := nodeClients(t, nodes)
		name := redistest.Name(t)
		var mine, others []*Client
		for _, rdb := range cs {
			mine, others = append(mine, newClient(t, rdb)), append(others, newClient(t, rdb))
		}
		multi := func(owners []*Client, idx ...int) *MultiLock {
			var parts []*Mutex
			for _, i := range idx {
				parts = append(parts, owners[i].Mutex(name))
			}
			ml, err := NewMultiLock(parts, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ml.Close() })
			return ml
		}
		ml := multi(mine, 2, 0, 1, 0)
		// Lock i of the rig is the one on node i.
		idx := make([]int, len(ml.b.parts))
		for i, p := range ml.b.parts {
			idx[i] = slices.Index(cs, p.rdb)
		}
		if len(idx) != len(nodes) {
			t.Fatalf("%d locks over %d nodes", len(idx), len(nodes))
		}
		return &multiRig{
			ml: ml, e: ml.e,
			holder: func(i int) *Mutex { return others[idx[i]].Mutex(name) },
			second: func(is ...int) *MultiLock {
				var nodes []int
				for _, i := range slices.Backward(is) {
					nodes = append(nodes, idx[i])
				}
				return multi(others, nodes...)
			},
			close: func() { ml.Close() },
		}
	}
}

// TestMultiLockIndependentNodes runs the MultiLock tests over three
// independent masters (TestTopologies runs them on one Redis of each
// topology).
func TestMultiLockIndependentNodes(t *testing.T) {
	multiLockTests(t, nodesRig(redistest.Nodes(t, 3)))
}

func multiLockTests(t *testing.T, rig newRig) {
	t.Run("all or none", func(t *testing.T) { testMultiAllOrNone(t, rig) })
	t.Run("overlapping sets", func(t *testing.T) { testMultiOverlap(t, rig) })
	t.Run("reentrant", func(t *testing.T) { testMultiReentrant(t, rig) })
	t.Run("watchdog", func(t *testing.T) { testMultiWatchdog(t, rig) })
	t.Run("a lock lost", func(t *testing.T) { testMultiLost(t, rig) })
	t.Run("cancelled at each step", func(t *testing.T) { testMultiCancelled(t, rig) })
	t.Run("close mid-call", func(t *testing.T) { testMultiClose(t, rig) })
}

// testMultiAllOrNone: while another owner holds one lock, TryLock takes none
// (it gives back the one it took before), Lock waits holding none of them,
// and obtains all once that lock is released.
func testMultiAllOrNone(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	r := rig(t, WithBackoff(time.Millisecond, 20*time.Millisecond), WithWatchdog(10*time.Second))
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

// TestMultiLockRefused: what cannot make a MultiLock is refused, not
// panicked on, and touches no Redis.
func TestMultiLockRefused(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	c := newClient(t, rdb)
	ctx := testCtx(t)
	for _, ml := range []*MultiLock{c.MultiLock(nil), c.MultiLock([]string{"a", "b{"})} {
		if _, err := ml.TryLock(ctx); err == nil || errors.Is(err, ErrNotObtained) {
			t.Fatalf("TryLock of %q: %v", ml.Names(), err)
		}
	}
	r, err := NewRedlock([]redis.UniversalClient{rdb})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, parts := range [][]*Mutex{nil, {c.Mutex("a"), nil}, {c.Mutex("a"), r.Mutex("b")}, {c.Mutex("{")}} {
		if ml, err := NewMultiLock(parts); err == nil {
			ml.Close()
			t.Fatalf("NewMultiLock(%v) made a MultiLock", parts)
		}
	}
}

// testMultiWatchdog: the watchdog renews every lock past the lease.
func testMultiWatchdog(t *testing.T, rig newRig) {
	ctx := testCtx(t)
	const lease = time.Second
	r := rig(t, WithWatchdog(lease))
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
	r := rig(t, WithWatchdog(time.Second))
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
