package cache

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// rowDB is a database row per key that a writer updates before deleting
// the cache entry, as an application does.
type rowDB struct {
	mu   sync.Mutex
	rows map[string]string
}

func (d *rowDB) get(k string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rows[k]
}

// write updates k's row and deletes its entry through c: the write has
// returned when write does.
func (d *rowDB) write(t *testing.T, c *Cache[string], k, v string) {
	t.Helper()
	d.mu.Lock()
	d.rows[k] = v
	d.mu.Unlock()
	if err := c.Delete(context.Background(), k); err != nil {
		t.Fatal(err)
	}
}

// gatedLoads holds the loader calls it is told to: load number n (from 1)
// reads the row, reports it on entered, then waits for release[n].
type gatedLoads struct {
	mu      sync.Mutex
	n       int
	entered chan int
	release map[int]chan struct{}
}

func newGatedLoads(held ...int) *gatedLoads {
	g := &gatedLoads{entered: make(chan int, 16), release: map[int]chan struct{}{}}
	for _, n := range held {
		g.release[n] = make(chan struct{})
	}
	return g
}

// hold reads the row with read, then waits if this call is held.
func (g *gatedLoads) hold(read func() string) string {
	g.mu.Lock()
	g.n++
	n := g.n
	ch := g.release[n]
	g.mu.Unlock()
	v := read()
	if ch != nil {
		g.entered <- n
		<-ch
	}
	return v
}

func (g *gatedLoads) await(t *testing.T, n int) {
	t.Helper()
	select {
	case got := <-g.entered:
		if got != n {
			t.Fatalf("load %d held, want %d", got, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("load %d never started", n)
	}
}

// settled waits until a call started in the background has either shared
// a read of its instance (joined one, or queued behind one) or returned
// (its answer is then put back on returned).
func settled(t *testing.T, shared <-chan string, key string, returned chan getAnswer) {
	t.Helper()
	for {
		select {
		case k := <-shared:
			if k == key {
				return
			}
		case a := <-returned:
			returned <- a
			return
		case <-time.After(10 * time.Second):
			t.Fatalf("the call of %q neither shared a read nor returned", key)
		}
	}
}

// twoInstances returns caches A and B on separate go-redis clients of the
// same servers, under the same prefix, without a local tier; B's joins are
// reported on shared.
func twoInstances(t *testing.T, rdb, rdb2 redis.UniversalClient, opts ...Option) (a, b *Cache[string], shared chan string) {
	shared = make(chan string, 64)
	a = newCache[string](t, rdb, opts...)
	b = newCache[string](t, rdb2, append([]Option{withHooks(&hooks{OnJoin: func(k string) { shared <- k }})}, opts...)...)
	return a, b, shared
}

// A Get that starts after another instance's write returned does not get a
// value loaded before that write. B's fill of the old row is refused (A's
// Delete removed B's lease), B reads again and loads, a second write of A's
// refuses that fill too, and a Get of B that started after the second write
// must not be handed what the refused fill loaded.
func TestGetAfterOtherInstanceWriteRefusedTwice(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b, shared := twoInstances(t, rdb, ownClient(t, rdb))
		db := &rowDB{rows: map[string]string{"k": "v0"}}
		if err := a.Delete(ctx, "k"); err != nil { // left by an earlier run
			t.Fatal(err)
		}
		gate := newGatedLoads(1, 2)
		load := func(_ context.Context, k string) (string, error) {
			return gate.hold(func() string { return db.get(k) }), nil
		}
		first := make(chan getAnswer, 1)
		go func() {
			v, err := b.Get(ctx, "k", load)
			first <- getAnswer{v, err}
		}()
		gate.await(t, 1) // B loaded v0 under its lease
		db.write(t, a, "k", "v1")
		close(gate.release[1]) // B's fill is refused
		gate.await(t, 2)       // B loads again (v1) under a new lease
		db.write(t, a, "k", "v2")
		late := make(chan getAnswer, 1)
		go func() { // starts after the second write returned
			v, err := b.Get(ctx, "k", load)
			late <- getAnswer{v, err}
		}()
		settled(t, shared, "k", late)
		close(gate.release[2]) // this fill is refused too
		if got := <-late; got.err != nil || got.v != "v2" {
			t.Errorf("Get that started after the write of v2 = %q, %v", got.v, got.err)
		}
		if got := <-first; got.err != nil {
			t.Errorf("first Get: %v", got.err)
		}
	})
}

// GetMany shares a key's read only while it is undecided: a Get of a key the
// batch found in Redis, started after another instance's write of it
// returned, reads afresh even while the batch still loads its slowest key.
func TestGetAfterOtherInstanceWriteDuringGetMany(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b, shared := twoInstances(t, rdb, ownClient(t, rdb))
		db := &rowDB{rows: map[string]string{"fast": "v0", "slow": "s0"}}
		if err := a.Delete(ctx, "fast", "slow"); err != nil { // left by an earlier run
			t.Fatal(err)
		}
		load := func(_ context.Context, k string) (string, error) { return db.get(k), nil }
		if v, err := b.Get(ctx, "fast", load); err != nil || v != "v0" {
			t.Fatalf("warming fast: %q, %v", v, err)
		}
		gate := newGatedLoads(1)
		batch := func(_ context.Context, ks []string) (map[string]string, error) {
			return map[string]string{"slow": gate.hold(func() string { return db.get("slow") })}, nil
		}
		many := make(chan map[string]string, 1)
		go func() {
			m, err := b.GetMany(ctx, []string{"fast", "slow"}, batch)
			if err != nil {
				t.Error(err)
			}
			many <- m
		}()
		gate.await(t, 1) // the batch read fast (a hit) and loads slow
		db.write(t, a, "fast", "v1")
		late := make(chan getAnswer, 1)
		go func() {
			v, err := b.Get(ctx, "fast", load)
			late <- getAnswer{v, err}
		}()
		settled(t, shared, "fast", late)
		close(gate.release[1])
		if got := <-late; got.err != nil || got.v != "v1" {
			t.Errorf("Get that started after the write of v1 = %q, %v", got.v, got.err)
		}
		if m := <-many; m["slow"] != "s0" {
			t.Errorf("GetMany = %v", m)
		}
	})
}
