package lock

import (
	"context"
	"errors"
	"slices"
	"testing"

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
