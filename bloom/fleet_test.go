package bloom

import (
	"strconv"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The fleet tests' health check: H = 400 ms.
const (
	fleetInterval = 200 * time.Millisecond
	fleetTimeout  = 200 * time.Millisecond
	fleetBound    = fleetInterval + fleetTimeout
)

// fleetOf opens n instances of one fleet filter, each on a Redis client of
// its own, and fills it from keys through the first.
func fleetOf(t *testing.T, rdb redis.UniversalClient, n int, keys []string) []*Fleet {
	t.Helper()
	name := redistest.Name(t)
	var fs []*Fleet
	for range n {
		client := redistest.FromSpec(t, redistest.Spec(rdb), nil)
		f, err := NewFleet(t.Context(), client, name, 10_000, 0.01, WithHealthCheck(fleetInterval, fleetTimeout), WithLogger(quietLog))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		fs = append(fs, f)
	}
	mustRebuild(t, fs[0], keys)
	for i, f := range fs {
		waitFor(t, 10*time.Second, "instance "+strconv.Itoa(i)+" trusts the filter", func() bool {
			ok, _ := f.MayContain(t.Context(), "never-added")
			return f.Ready() && !ok
		})
	}
	return fs
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: not %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// seenWithin adds key through f and checks that every instance finds it
// from the bound on after Add returned (and keeps finding it).
func seenWithin(t *testing.T, fs []*Fleet, f *Fleet, key string) {
	t.Helper()
	if err := f.Add(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	added := time.Now()
	for i, g := range fs {
		for {
			ok, _ := g.MayContain(t.Context(), key)
			if ok {
				break
			}
			if time.Since(added) > fleetBound {
				t.Fatalf("instance %d answers %q absent %v after its Add returned (bound %v)", i, key, time.Since(added), fleetBound)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// A key added through any instance is found by every instance within the
// bound, and keys never added are still refused (the copies are of use).
func TestFleetAddSeenEverywhere(t *testing.T) {
	redistest.OnTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		fs := fleetOf(t, rdb, 3, present("row:", 200))
		for i := range 30 {
			seenWithin(t, fs, fs[i%3], "new:"+strconv.Itoa(i))
		}
		for i, f := range fs {
			waitFor(t, 10*time.Second, "instance "+strconv.Itoa(i)+" refuses a key never added", func() bool {
				ok, _ := f.MayContain(t.Context(), "never-added")
				return !ok && f.Stats().SafeMode == 0
			})
			if st := f.Stats(); st.Heard == 0 {
				t.Errorf("instance %d heard no add: %+v", i, st)
			}
		}
	})
}

// The promise holds whatever happens to pub/sub and to Redis: the
// subscriber's connection killed, messages lost (a gap in the numbers),
// FLUSHALL (the filter and its numbers gone). An instance that cannot vouch
// answers "maybe", never a false "absent".
func TestFleetFaultsNeverHideAKey(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := t.Context()
	fs := fleetOf(t, rdb, 3, present("row:", 200))

	// The subscribers' connections killed: each instance goes to safe mode,
	// subscribes again and rereads; an add meanwhile is never missed.
	if err := rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	seenWithin(t, fs, fs[0], "during-kill")
	for i, f := range fs {
		waitFor(t, 10*time.Second, "instance "+strconv.Itoa(i)+" trusted again", func() bool { return f.Stats().SafeMode == 0 })
	}
	seenWithin(t, fs, fs[1], "after-kill")

	// A lost message: the numbers skip one; the next add shows the gap.
	if err := rdb.Incr(ctx, fs[0].r.k.Seq).Err(); err != nil {
		t.Fatal(err)
	}
	seenWithin(t, fs, fs[2], "after-gap")
	for i, f := range fs {
		waitFor(t, 10*time.Second, "instance "+strconv.Itoa(i)+" reread after the gap", func() bool {
			st := f.Stats()
			return st.Gaps > 0 && st.SafeMode == 0
		})
	}

	// FLUSHALL: the filter is gone; the next add recreates it, not ready,
	// and numbers from 1: every instance steps back to "maybe".
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	seenWithin(t, fs, fs[0], "after-flush")
	for i, f := range fs {
		waitFor(t, 10*time.Second, "instance "+strconv.Itoa(i)+" in safe mode after FLUSHALL", func() bool {
			ok, _ := f.MayContain(ctx, "never-added")
			return ok && !f.Ready()
		})
	}
	// A rebuild brings every instance back.
	mustRebuild(t, fs[1], append(present("row:", 200), "after-flush"))
	for i, f := range fs {
		waitFor(t, 10*time.Second, "instance "+strconv.Itoa(i)+" ready after the rebuild", func() bool {
			ok, _ := f.MayContain(ctx, "never-added")
			return f.Ready() && !ok
		})
		if ok, _ := f.MayContain(ctx, "after-flush"); !ok {
			t.Errorf("instance %d lost a key the rebuild holds", i)
		}
	}
}

// A filter that starts while the bitmap exists reads it and scans nothing:
// it is ready without a Rebuild of its own.
func TestFleetStartsFromTheSharedBitmap(t *testing.T) {
	redistest.NeedServer(t)
	_, rdb := redistest.Single(t)
	fs := fleetOf(t, rdb, 1, present("row:", 500))
	late, err := NewFleet(t.Context(), redistest.FromSpec(t, redistest.Spec(rdb), nil), redistest.Name(t), 10_000, 0.01,
		WithHealthCheck(fleetInterval, fleetTimeout), WithLogger(quietLog))
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	waitFor(t, 10*time.Second, "the late instance ready", func() bool { return late.Ready() && late.Stats().SafeMode == 0 })
	for _, k := range present("row:", 500) {
		if ok, _ := late.MayContain(t.Context(), k); !ok {
			t.Fatalf("the late instance misses %q", k)
		}
	}
	if ok, _ := late.MayContain(t.Context(), "never-added"); ok {
		t.Fatal("the late instance answers maybe for a key never added")
	}
	if st := fs[0].Stats(); st.SafeMode != 0 {
		t.Fatalf("the first instance: %+v", st)
	}
}

// A Redis restart without persistence: the subscriptions drop, the filter
// and its numbers are gone. Every instance steps back to "maybe" (never a
// false "absent" for a key added after the restart) until a rebuild.
func TestFleetRedisRestartWithoutPersistence(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := t.Context()
	fs := fleetOf(t, rdb, 3, present("row:", 200))
	srv.Kill()
	srv.Restart()
	waitFor(t, 10*time.Second, "Redis back", func() bool { return rdb.Ping(ctx).Err() == nil })
	deadline := time.Now().Add(10 * time.Second)
	for fs[0].Add(ctx, "after-restart") != nil {
		if time.Now().After(deadline) {
			t.Fatal("no Add succeeded after the restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	added := time.Now()
	for i, f := range fs {
		for {
			ok, _ := f.MayContain(ctx, "after-restart")
			if ok {
				break
			}
			if time.Since(added) > fleetBound {
				t.Fatalf("instance %d answers a key added after the restart absent %v after the Add", i, time.Since(added))
			}
			time.Sleep(time.Millisecond)
		}
		waitFor(t, 10*time.Second, "instance "+strconv.Itoa(i)+" not ready after the restart", func() bool {
			ok, _ := f.MayContain(ctx, "never-added")
			return ok && !f.Ready()
		})
	}
}

// A Sentinel failover: the subscriptions move to the new master; every
// instance rereads there and a key added after the failover is found by all
// within the bound, and so are the keys added before it (the replica had
// them).
func TestFleetFailover(t *testing.T) {
	redistest.NeedServer(t)
	sn, rdb := redistest.StartSentinel(t)
	ctx := t.Context()
	fs := fleetOf(t, rdb, 3, present("row:", 200))
	seenWithin(t, fs, fs[0], "before-failover")
	time.Sleep(500 * time.Millisecond) // replicated
	sn.Failover()
	deadline := time.Now().Add(30 * time.Second)
	for fs[1].Add(ctx, "after-failover") != nil {
		if time.Now().After(deadline) {
			t.Fatal("no Add succeeded after the failover")
		}
		time.Sleep(20 * time.Millisecond)
	}
	added := time.Now()
	for i, f := range fs {
		for _, key := range []string{"after-failover", "before-failover", "row:7"} {
			for {
				ok, _ := f.MayContain(ctx, key)
				if ok {
					break
				}
				if time.Since(added) > fleetBound {
					t.Fatalf("instance %d answers %q absent %v after the failover's add", i, key, time.Since(added))
				}
				time.Sleep(time.Millisecond)
			}
		}
		waitFor(t, 20*time.Second, "instance "+strconv.Itoa(i)+" trusted on the new master", func() bool {
			ok, _ := f.MayContain(ctx, "never-added")
			return f.Ready() && !ok
		})
	}
}

// Close racing the subscription's events and a reread never panics and
// leaves no reread running.
func TestFleetCloseMidReread(t *testing.T) {
	redistest.NeedServer(t)
	srv := redistest.Start(t)
	rdb := srv.Client()
	for i := range 20 {
		f, err := NewFleet(t.Context(), redistest.FromSpec(t, redistest.Spec(rdb), nil), redistest.Name(t)+strconv.Itoa(i), 1000, 0.01,
			WithHealthCheck(fleetInterval, fleetTimeout), WithLogger(quietLog))
		if err != nil {
			t.Fatal(err)
		}
		go f.Add(t.Context(), "k")
		if i%2 == 0 {
			rdb.ClientKillByFilter(t.Context(), "TYPE", "pubsub")
		}
		time.Sleep(time.Duration(i) * time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- f.Close() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Close %d did not return", i)
		}
		f.mu.Lock()
		reading := f.state.reading
		f.mu.Unlock()
		if reading {
			t.Fatalf("a reread is still under way after Close %d", i)
		}
	}
}
