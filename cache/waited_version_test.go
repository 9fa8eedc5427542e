package cache

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A placeholder that kept a version and that a waiter marked (the longest
// shape, wire.PlaceholderKeptMarkedSize) still carries the key's version:
// versioned writes and MarkStale must read it there as in every other shape.

// waitedKeptPlaceholder leaves key under c's prefix holding a fill lease that
// kept version 5 (taken over a version tombstone) and that a waiter of
// another instance marked. The loader holds the lease until the returned
// function is called, which then waits for both readers.
func waitedKeptPlaceholder(t *testing.T, rdb redis.UniversalClient, c *Cache[string], key string) (finish func()) {
	t.Helper()
	ctx := context.Background()
	if ok, err := c.SetVersioned(ctx, key, "v5", 5); err != nil || !ok {
		t.Fatalf("SetVersioned(5) = %v, %v", ok, err)
	}
	if err := c.DeleteKeepingVersion(ctx, time.Minute, key); err != nil {
		t.Fatal(err)
	}
	log := newWakeLog()
	waiter := newCache[string](t, ownClient(t, rdb), withHooks(log.hooks()), WithPrefix(c.cfg.prefix))
	loading, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		c.Get(ctx, key, func(context.Context, string) (string, error) {
			close(loading)
			<-release
			return "from db", nil
		})
	}()
	<-loading
	waited := make(chan getAnswer, 1)
	go func() {
		defer func() { done <- struct{}{} }()
		v, err := waiter.Get(ctx, key, func(context.Context, string) (string, error) { return "from db", nil })
		waited <- getAnswer{v, err}
	}()
	select {
	case <-log.marked:
	case a := <-waited: // it never waited: say what it got instead
		close(release)
		t.Fatalf("the waiter's Get returned %q, %v without marking the lease", a.v, a.err)
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("timed out waiting for the waiter to mark the lease")
	}
	raw, err := rdb.Get(ctx, c.cfg.prefix+key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if s := wire.Classify(raw); s != wire.ShapePlaceholderKeptMarked {
		t.Fatalf("key holds %q (%d bytes): want a marked placeholder that kept a version", s, len(raw))
	}
	return func() {
		close(release)
		<-done
		<-done
	}
}

// After SetVersioned(5) and DeleteKeepingVersion, a reader's lease keeps
// version 5 and a waiter marks it: a late SetVersioned(3) must be refused.
func TestVersionedWriteRefusedOverWaitedPlaceholder(t *testing.T) {
	redistest.NeedServer(t) // the wait mark needs fill notifications (SPUBLISH, PUBLISH from scripts)
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := newCache[string](t, rdb)
		finish := waitedKeptPlaceholder(t, rdb, c, "k")
		defer finish()
		refuses(t, c, "k", 3)
	})
}

// MarkStale on that placeholder leaves a version tombstone of version 5, so a
// later SetVersioned(3) is refused.
func TestMarkStaleKeepsVersionOfWaitedPlaceholder(t *testing.T) {
	redistest.NeedServer(t)
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := newCache[string](t, rdb)
		finish := waitedKeptPlaceholder(t, rdb, c, "k")
		defer finish()
		if err := c.MarkStale(ctx, time.Minute, "k"); err != nil {
			t.Fatal(err)
		}
		raw, err := rdb.Get(ctx, c.cfg.prefix+"k").Bytes()
		if err != nil {
			t.Fatalf("MarkStale left nothing: %v", err)
		}
		if v, ok := wire.TombstoneVersion(raw); !ok || v != 5 {
			t.Fatalf("MarkStale left %q: want a version tombstone of version 5", wire.Classify(raw))
		}
		refuses(t, c, "k", 3)
	})
}
