package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// generations reports, on a channel, every generation c moves to.
func generations[V any](c *Cache[V]) <-chan uint64 {
	ch := make(chan uint64, 16)
	c.hooks().OnGeneration = func(g uint64) { ch <- g }
	return ch
}

// awaitGeneration waits until c has moved to generation g. The timeout only
// turns a lost announcement into a failure instead of a hang.
func awaitGeneration(t *testing.T, ch <-chan uint64, g uint64) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		select {
		case got := <-ch:
			if got >= g {
				return time.Since(start)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("generation %d never reached", g)
		}
	}
}

// runPrefix is a prefix of the run's own: a shared server keeps the
// generation and the entries of an earlier run (-count).
func runPrefix(t *testing.T) Option {
	return WithPrefix(fmt.Sprintf("%s%d:", prefixFor(t), time.Now().UnixNano()))
}

func loaderOf(v string, n *atomic.Int64) Loader[string] {
	return func(context.Context, string) (string, error) {
		n.Add(1)
		return v, nil
	}
}

// Clear empties the cache for every instance: this one at once, the others
// (with a local tier or without) once the announcement arrives, within the
// invalidation bound; their local tiers are cleared. Hash tags in user keys
// still decide the slot.
func TestClearEmptiesEveryInstance(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		pre := runPrefix(t)
		a := localCache(t, rdb, testHealth, pre)
		b := localCache(t, rdb, testHealth, pre)
		n := newCache[string](t, rdb, pre)
		awaitSubscribed(t, n)
		bGen, nGen := generations(b), generations(n)
		var loads atomic.Int64
		for _, c := range []*Cache[string]{a, b, n} {
			if v, err := c.Get(ctx, "k", loaderOf("old", &loads)); err != nil || v != "old" {
				t.Fatalf("Get = %q, %v", v, err)
			}
		}
		if _, ok := b.tier.Store().Get("k"); !ok {
			t.Fatal("b holds no local copy")
		}
		if err := a.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		cleared := time.Now()
		if v, _ := a.Get(ctx, "k", loaderOf("new", &loads)); v != "new" {
			t.Fatalf("the clearing instance got %q after Clear", v)
		}
		for name, ch := range map[string]<-chan uint64{"local tier": bGen, "no local tier": nGen} {
			awaitGeneration(t, ch, a.keys.Gen())
			t.Logf("instance with %s switched %v after Clear returned (bound %v)", name, time.Since(cleared), testHealthBound())
		}
		if time.Since(cleared) > testHealthBound()+staleSlack {
			t.Fatalf("the others switched %v after Clear, bound %v", time.Since(cleared), testHealthBound())
		}
		if _, ok := b.tier.Store().Get("k"); ok {
			t.Fatal("b's local tier kept the entry")
		}
		for _, c := range []*Cache[string]{b, n} {
			if v, err := c.Get(ctx, "k", never(t)); err != nil || v != "new" {
				t.Fatalf("after Clear: %q, %v", v, err)
			}
		}
		if loads.Load() != 2 {
			t.Fatalf("%d loads, want one per generation", loads.Load())
		}
		st := a.Stats()
		if st.Clears != 1 || st.Generations != 1 || b.Stats().Generations != 1 || b.Stats().Clears != 0 {
			t.Fatalf("a: Clears %d Generations %d; b: Generations %d", st.Clears, st.Generations, b.Stats().Generations)
		}
		// A hash tag in the user key still routes the entry.
		tagged := "{user42}:cart"
		a.Set(ctx, tagged, "v")
		rkey := wire.EntryKey(a.cfg.prefix, a.keys.Gen(), tagged)
		if rdb.Exists(ctx, rkey).Val() != 1 {
			t.Fatalf("%q not written", rkey)
		}
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			if s1, s2 := cc.ClusterKeySlot(ctx, rkey).Val(), cc.ClusterKeySlot(ctx, "{user42}").Val(); s1 != s2 {
				t.Fatalf("slot %d, the tag's is %d", s1, s2)
			}
		}
		// A new instance reads the generation at New.
		late := newCache[string](t, rdb, pre)
		if v, _ := late.Get(ctx, "k", never(t)); v != "new" {
			t.Fatalf("an instance made after Clear read %q", v)
		}
	})
}

// A fill whose lease was taken before a Clear (here: on another instance,
// whose loader returns after the Clear) does not become visible in the new
// generation: every Get after Clear loads afresh.
func TestFillRacingClearNotVisible(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		pre := runPrefix(t)
		a := newCache[string](t, rdb, pre)
		b := localCache(t, rdb, pre)
		bGen := generations(b)
		filled := make(chan bool, 1)
		b.hooks().AfterLoad = func(string) {
			b.hooks().AfterLoad = nil
			if err := a.Clear(ctx); err != nil {
				t.Error(err)
			}
			select { // b has switched before its fill runs
			case <-bGen:
			case <-time.After(5 * time.Second):
				t.Error("b never switched") // not Fatal: this runs on the fill's goroutine
			}
		}
		b.hooks().OnFill = func(_ string, ok bool) { filled <- ok }
		if v, _ := b.Get(ctx, "k", func(context.Context, string) (string, error) { return "loaded before Clear", nil }); v != "loaded before Clear" {
			t.Fatal(v) // its caller called before Clear returned
		}
		<-filled
		if _, ok := b.tier.Store().Get("k"); ok {
			t.Fatal("the local tier admitted a value loaded before Clear")
		}
		var loads atomic.Int64
		for _, c := range []*Cache[string]{a, b} {
			if v, _ := c.Get(ctx, "k", loaderOf("after", &loads)); v != "after" {
				t.Fatalf("a value loaded before Clear is visible after it: %q", v)
			}
		}
		if loads.Load() != 1 {
			t.Fatalf("%d loads after Clear, want 1", loads.Load())
		}
	})
}

// A stampede on a hot key across two instances, with a Clear in the middle:
// one load for the generation before, one for the generation after.
func TestClearDuringStampede(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		pre := runPrefix(t)
		a := newCache[string](t, rdb, pre)
		b := newCache[string](t, rdb, pre)
		awaitSubscribed(t, b) // see clear.go on a Clear before the first Up
		bGen := generations(b)
		var loads atomic.Int64
		loading := make(chan struct{}, 4)
		release := make(chan struct{})
		load := func(context.Context, string) (string, error) {
			loads.Add(1)
			loading <- struct{}{}
			<-release
			return "v", nil
		}
		var wg sync.WaitGroup
		stampede := func() {
			for i := 0; i < 20; i++ {
				c := a
				if i%2 == 1 {
					c = b
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if v, err := c.Get(ctx, "hot", load); err != nil || v != "v" {
						t.Errorf("Get = %q, %v", v, err)
					}
				}()
			}
		}
		stampede()
		<-loading // the first generation's load holds its lease
		if err := a.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		awaitGeneration(t, bGen, a.keys.Gen())
		stampede()
		<-loading // the second generation's load
		close(release)
		wg.Wait()
		if n := loads.Load(); n != 2 {
			t.Fatalf("%d loads, want one per generation", n)
		}
		if v, _ := b.Get(ctx, "hot", never(t)); v != "v" {
			t.Fatal(v)
		}
	})
}

// An announcement missed in a subscription gap: the generation is read
// again when the subscription comes back.
func TestClearMissedAnnouncementReread(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	b := localCache(t, rdb, runPrefix(t))
	bGen := generations(b)
	b.Get(ctx, "k", func(context.Context, string) (string, error) { return "old", nil })
	// Another instance's Clear whose message never arrived.
	rdb.Incr(ctx, wire.GenerationKey(b.cfg.prefix))
	listener[string]{b}.Up(time.Now().Add(b.cfg.local.healthInterval+b.cfg.local.healthTimeout), true) // the subscription back up
	awaitGeneration(t, bGen, 1)
	if v, _ := b.Get(ctx, "k", func(context.Context, string) (string, error) { return "new", nil }); v != "new" {
		t.Fatalf("after the reread: %q", v)
	}
}

func TestClearBadInput(t *testing.T) {
	_, rdb := newSingle(t)
	ctx := context.Background()
	c := newCache[string](t, rdb)
	reserved := wire.GenerationMark + "1" + wire.GenerationMark + "k"
	if _, err := c.Get(ctx, reserved, never(t)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Get of a reserved key: %v", err)
	}
	if err := c.Set(ctx, reserved, "v"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Set of a reserved key: %v", err)
	}
	if err := c.Delete(ctx, reserved); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Delete of a reserved key: %v", err)
	}
	if _, err := c.GetMany(ctx, []string{"a", reserved}, func(context.Context, []string) (map[string]string, error) { return nil, nil }); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("GetMany with a reserved key: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Clear(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Clear on an ended context: %v", err)
	}
	c.Close()
	if err := c.Clear(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Clear after Close: %v", err)
	}
}
