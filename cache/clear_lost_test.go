package cache

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// staleWait is how long staleFor waits for an instance to stop answering
// the old value: ten health bounds, generous on a loaded machine, and far
// below the entries' TTL, until which a generation nobody moved on from
// keeps answering.
func staleWait() time.Duration { return 10 * testHealthBound() }

// staleFor reads key through c until it no longer answers old and returns
// how long after since that was; ok is false if it still answered old
// staleWait after since.
func staleFor(t *testing.T, c *Cache[string], key, old string, since time.Time) (d time.Duration, ok bool) {
	t.Helper()
	fresh := func(context.Context, string) (string, error) { return "fresh", nil }
	for {
		v, err := c.Get(context.Background(), key, fresh)
		if err == nil && v != old {
			return time.Since(since), true
		}
		if time.Since(since) > staleWait() {
			return time.Since(since), false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// mustGet reads key through c, loading v; Redis may still be coming back
// from a restart, so an error is retried for a while.
func mustGet(t *testing.T, c *Cache[string], key, v string) {
	t.Helper()
	load := func(context.Context, string) (string, error) { return v, nil }
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := c.Get(context.Background(), key, load)
		if err == nil {
			if got != v {
				t.Fatalf("Get(%q) = %q, want %q", key, got, v)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get(%q): %v", key, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertStopped fails the test unless c stopped answering old after since,
// and logs how long it took.
func assertStopped(t *testing.T, name string, c *Cache[string], key, old string, since time.Time) {
	t.Helper()
	d, ok := staleFor(t, c, key, old, since)
	if !ok {
		t.Fatalf("%s still answers %q %v later (health bound %v)", name, old, d, testHealthBound())
	}
	t.Logf("%s stopped answering %q %v later (health bound %v)", name, old, d, testHealthBound())
}

// A Clear after Redis forgot the generation key (FLUSHALL, a restart
// without persistence, a key put back behind) still moves every instance to a generation none of
// them used: the entries written since under the generation before are not
// read again.
func TestClearAfterRedisForgotTheGeneration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		forget func(t *testing.T, srv *redistest.Server, c *Cache[string])
	}{
		{"FLUSHALL", func(t *testing.T, srv *redistest.Server, _ *Cache[string]) {
			if err := srv.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"restart", func(t *testing.T, srv *redistest.Server, _ *Cache[string]) {
			redistest.NeedServer(t) // miniredis keeps its data across a restart
			srv.Kill()
			srv.Restart()
		}},
		// As after a failover to a replica that missed the last Clear.
		{"key behind", func(t *testing.T, srv *redistest.Server, c *Cache[string]) {
			if err := srv.Client().Set(context.Background(), wire.GenerationKey(c.cfg.prefix), c.keys.Gen()-1, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newSingle(t)
			ctx := context.Background()
			pre := runPrefix(t)
			a := newCache[string](t, srv.Client(), pre, testHealth)
			b := newCache[string](t, srv.Client(), pre, testHealth)
			awaitSubscribed(t, a)
			awaitSubscribed(t, b)
			bGen := generations(b)
			if err := a.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			awaitGeneration(t, bGen, a.keys.Gen())
			tc.forget(t, srv, a)
			mustGet(t, a, "k", "old")
			mustGet(t, b, "k", "old")
			if err := a.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			cleared := time.Now()
			assertStopped(t, "the clearing instance", a, "k", "old", cleared)
			assertStopped(t, "the other instance", b, "k", "old", cleared)
		})
	}
}

// An instance started after a FLUSHALL, beside one that had moved to a
// later generation before it: a Delete or a Clear by either reaches the
// other within the health bound.
func TestInstanceStartedAfterFlushAll(t *testing.T) {
	srv, _ := newSingle(t)
	ctx := context.Background()
	pre := runPrefix(t)
	old := newCache[string](t, srv.Client(), pre, testHealth)
	if err := old.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	late := newCache[string](t, srv.Client(), pre, testHealth)
	awaitSubscribed(t, old)
	awaitSubscribed(t, late)
	for _, step := range []struct {
		name         string
		key          string
		by, observer *Cache[string]
		write        func(c *Cache[string], key string) error
	}{
		{"Delete by the later instance", "k1", late, old, func(c *Cache[string], key string) error { return c.Delete(ctx, key) }},
		{"Delete by the older instance", "k2", old, late, func(c *Cache[string], key string) error { return c.Delete(ctx, key) }},
		{"Clear by the later instance", "k3", late, old, func(c *Cache[string], _ string) error { return c.Clear(ctx) }},
		{"Clear by the older instance", "k4", old, late, func(c *Cache[string], _ string) error { return c.Clear(ctx) }},
	} {
		mustGet(t, step.observer, step.key, "v1")
		mustGet(t, step.by, step.key, "v1")
		if err := step.write(step.by, step.key); err != nil {
			t.Fatal(err)
		}
		assertStopped(t, step.name+": the other instance", step.observer, step.key, "v1", time.Now())
	}
}

// An instance whose invalidation subscription never comes up (here: a
// Redis 7 user without channel permission) learns a Clear within the health
// bound all the same, and the refused subscription is reported.
func TestClearReachesInstanceWithoutSubscription(t *testing.T) {
	srv, admin := redistest.RealSingle(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "resetchannels", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "app", Password: "pw"})
	defer rdb.Close()
	refused := make(chan error, 1)
	onErr := func(err error) {
		if strings.Contains(err.Error(), "NOPERM") {
			select {
			case refused <- err:
			default:
			}
		}
	}
	pre := runPrefix(t)
	b := newCache[string](t, rdb, pre, testHealth, WithLocal(1<<20), WithLocalAdmitAll(), WithErrorHandler(onErr))
	a := newCache[string](t, admin, pre, testHealth)
	awaitSubscribed(t, a)
	select {
	case err := <-refused:
		t.Logf("reported: %v", err)
	case <-time.After(staleWait()):
		t.Fatal("the refused subscription was not reported")
	}
	mustGet(t, a, "k", "old")
	mustGet(t, b, "k", "old")
	if err := a.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	assertStopped(t, "the instance without a subscription", b, "k", "old", time.Now())
	if st := b.Stats(); st.SubscriptionDowns == 0 || st.LocalHits != 0 {
		t.Fatalf("SubscriptionDowns %d, LocalHits %d", st.SubscriptionDowns, st.LocalHits)
	}
}
