package bloom

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func mustRedis(t testing.TB, rdb redis.UniversalClient, name string, n uint, fp float64, opts ...Option) *Redis {
	t.Helper()
	r, err := NewRedis(context.Background(), rdb, name, n, fp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRedisFalsePositiveRate: 100k keys at 1%, 1M random absent keys probed
// in batches.
func TestRedisFalsePositiveRate(t *testing.T) {
	_, rdb := redistest.RealSingle(t) // miniredis' Lua is too slow for this volume
	const n, fp = 100_000, 0.01
	r := mustRedis(t, rdb, "fp", n, fp, WithBatchSize(2000))
	keys := present("row:", n)
	mustRebuild(t, r, keys)
	if rate := fpRate(t, r, keys); rate != 1 {
		t.Fatalf("%.4f of the added keys found, want all", rate)
	}
	rate := fpRate(t, r, absent(42, 1_000_000))
	t.Logf("redis: configured %.4f, measured %.5f on 1M absent keys (%v)", fp, rate, r.Params())
	if rate > 1.2*fp {
		t.Fatalf("false-positive rate %.4f exceeds 1.2 × %.4f", rate, fp)
	}
}

// TestRedisMatchesLocal: built from the same keys, the filters hold the same
// bitmap, whether the Redis one was filled key by key in Lua (Add) or
// uploaded (Rebuild), and so give the same answer to every probe.
func TestRedisMatchesLocal(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.RealSingle(t) // miniredis' Lua is too slow for this volume
	const n, fp = 20_000, 0.01
	keys := present("row:", n)
	l := mustLocal(t, n, fp)
	mustRebuild(t, l, keys)
	added := mustRedis(t, rdb, "added", n, fp)
	if err := added.Add(ctx, keys...); err != nil {
		t.Fatal(err)
	}
	rebuilt := mustRedis(t, rdb, "rebuilt", n, fp)
	mustRebuild(t, rebuilt, keys)

	if l.Params() != rebuilt.Params() {
		t.Fatalf("params differ: local %v, redis %v", l.Params(), rebuilt.Params())
	}
	want := redisLayout(l)
	for _, name := range []string{"added", "rebuilt"} {
		bits, err := rdb.Get(ctx, "{"+name+"}:bits").Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bits, want) {
			t.Fatalf("Redis bitmap %q differs from the local filter's bits", name)
		}
	}

	probes := append(absent(9, 90_000), keys[:10_000]...)
	lg, _ := l.MayContainMany(ctx, probes)
	rg, err := rebuilt.MayContainMany(ctx, probes)
	if err != nil {
		t.Fatal(err)
	}
	fps := 0
	for i := range probes {
		if lg[i] != rg[i] {
			t.Fatalf("probe %q: local %v, redis %v", probes[i], lg[i], rg[i])
		}
		if lg[i] && i < 90_000 {
			fps++
		}
	}
	if fps == 0 {
		t.Fatal("no false positives among 90k probes: the comparison did not exercise them")
	}
	// Small batches take the script's GETBIT-per-bit path instead of reading
	// the bitmap whole; the single-key path is a third way. All agree.
	window := probes[89_000:91_000]
	small := mustRedis(t, rdb, "rebuilt", n, fp, WithBatchSize(3))
	sg, err := small.MayContainMany(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range window {
		ro, err := rebuilt.MayContain(ctx, k)
		if err != nil || sg[i] != lg[89_000+i] || ro != lg[89_000+i] {
			t.Fatalf("probe %q: local %v, small batches %v, single %v (%v)", k, lg[89_000+i], sg[i], ro, err)
		}
	}
}

// TestRedisTwoInstances: a key added through one instance is found through
// another at once, and readiness set by one is seen by the other.
func TestRedisTwoInstances(t *testing.T) {
	ctx := context.Background()
	srv, rdbA := redistest.Single(t)
	rdbB := srv.Client()
	a := mustRedis(t, rdbA, "users", 1000, 0.001)
	b := mustRedis(t, rdbB, "users", 1000, 0.001)
	if a.Ready() || b.Ready() {
		t.Fatal("a new filter reports ready")
	}
	mustRebuild(t, a, present("row:", 100))
	if !a.Ready() {
		t.Fatal("not ready after Rebuild")
	}
	if ok, _ := b.MayContain(ctx, "new-row"); ok {
		t.Fatal("B accepts a key nobody added")
	}
	if !b.Ready() {
		t.Fatal("B did not learn that A's warm-up finished")
	}
	if err := a.Add(ctx, "new-row"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.MayContain(ctx, "new-row"); !ok || err != nil {
		t.Fatalf("B.MayContain(key added through A) = %v, %v", ok, err)
	}
}

func TestRedisMismatchRefused(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.Single(t)
	a := mustRedis(t, rdb, "orders", 1000, 0.01)
	mustRebuild(t, a, []string{"x"})

	_, err := NewRedis(ctx, rdb, "orders", 5000, 0.01)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("NewRedis with another size = %v, want ErrMismatch", err)
	}
	// The message names both sizes, so an operator can tell what clashed.
	want, _ := Estimate(5000, 0.01)
	for _, s := range []string{`"orders"`, "m=9586 k=7", want.String()} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	// Refusal left the filter alone.
	if ok, err := a.MayContain(ctx, "x"); !ok || err != nil || !a.Ready() {
		t.Fatalf("after a refused open: MayContain = %v, %v ready=%v", ok, err, a.Ready())
	}

	// A filter recreated under the same name with other parameters while an
	// instance runs is refused by that instance's scripts too.
	if err := a.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	mustRedis(t, rdb, "orders", 5000, 0.001)
	if _, err := a.MayContain(ctx, "x"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("MayContain on a foreign filter = %v, want ErrMismatch", err)
	}
	if _, err := a.MayContainMany(ctx, []string{"x", "y"}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("MayContainMany on a foreign filter = %v, want ErrMismatch", err)
	}
	if err := a.Add(ctx, "x"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Add on a foreign filter = %v, want ErrMismatch", err)
	}
	if err := a.Rebuild(ctx, keysFrom(nil)); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Rebuild on a foreign filter = %v, want ErrMismatch", err)
	}
	// A scheme stored by another version is refused as well.
	rdb.Set(ctx, "{orders}:cfg", want.String()+" v=99 ready=1", 0)
	if _, err := NewRedis(ctx, rdb, "orders", 5000, 0.001); !errors.Is(err, ErrMismatch) {
		t.Fatalf("NewRedis over another scheme = %v, want ErrMismatch", err)
	}
}

// TestRedisSafeMode: a filter that is not ready, or that Redis lost, never
// rejects a key.
func TestRedisSafeMode(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.Single(t)
	r := mustRedis(t, rdb, "safe", 1000, 0.01)
	probe := func(when string) {
		t.Helper()
		if ok, err := r.MayContain(ctx, "never-added"); !ok || err != nil {
			t.Fatalf("%s: MayContain = %v, %v; want true", when, ok, err)
		}
		got, err := r.MayContainMany(ctx, []string{"never-1", "never-2"})
		if err != nil || !got[0] || !got[1] {
			t.Fatalf("%s: MayContainMany = %v, %v; want all true", when, got, err)
		}
		if r.Ready() {
			t.Fatalf("%s: Ready() = true", when)
		}
	}
	probe("before warm-up")

	mustRebuild(t, r, []string{"row"})
	if ok, _ := r.MayContain(ctx, "never-added"); ok {
		t.Fatal("ready filter accepts an absent key")
	}

	// The bitmap alone evicted: cfg still says ready, the script must not
	// trust an empty bitmap.
	rdb.Del(ctx, "{safe}:bits")
	probe("bitmap evicted")
	if err := r.Add(ctx, "row2"); err != nil {
		t.Fatal(err)
	}
	probe("after an add recreated the bitmap")

	// Everything lost (a restart without persistence).
	mustRebuild(t, r, []string{"row"})
	rdb.FlushAll(ctx)
	probe("after FLUSHALL")
	if err := r.Add(ctx, "row3"); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "{safe}:cfg", "{safe}:bits").Result(); n != 2 {
		t.Fatalf("Add did not recreate the filter (%d of 2 keys)", n)
	}
	probe("after an add recreated the filter")
	mustRebuild(t, r, []string{"row"})
	if !r.Ready() {
		t.Fatal("Rebuild did not restore readiness")
	}
}

// TestRedisRebuildSwap pins what a rebuild promises across instances.
func TestRedisRebuildSwap(t *testing.T) {
	ctx := context.Background()
	srv, rdb := redistest.Single(t)
	a := mustRedis(t, rdb, "swap", 10_000, 1e-6, WithBatchSize(10))
	b := mustRedis(t, srv.Client(), "swap", 10_000, 1e-6)
	deleted := present("deleted:", 100)
	mustRebuild(t, a, deleted)

	rows := present("row:", 100)
	src := func(yield func(string, error) bool) {
		for i, k := range rows {
			if i == 50 {
				if ok, _ := b.MayContain(ctx, deleted[0]); !ok || !b.Ready() {
					t.Error("old filter not serving during rebuild")
				}
				if ok, _ := b.MayContain(ctx, rows[20]); ok {
					t.Error("new bitmap visible before the swap")
				}
				if err := b.Add(ctx, "inserted-during-rebuild"); err != nil {
					t.Error(err)
				}
				if err := b.Rebuild(ctx, keysFrom(nil)); !errors.Is(err, ErrRebuildInProgress) {
					t.Errorf("concurrent Rebuild = %v, want ErrRebuildInProgress", err)
				}
			}
			if !yield(k, nil) {
				return
			}
		}
	}
	if err := a.Rebuild(ctx, src); err != nil {
		t.Fatal(err)
	}
	for _, k := range append(rows, "inserted-during-rebuild") {
		if ok, _ := b.MayContain(ctx, k); !ok {
			t.Fatalf("%q missing after rebuild", k)
		}
	}
	for _, k := range deleted {
		if ok, _ := b.MayContain(ctx, k); ok {
			t.Fatalf("deleted row %q still present after rebuild", k)
		}
	}
	if n, _ := rdb.Exists(ctx, "{swap}:next", "{swap}:build").Result(); n != 0 {
		t.Fatalf("%d rebuild keys left behind", n)
	}
	mustRebuild(t, b, rows) // the lease was released
}

// TestRedisRebuildRenewsLease: a source slower than the lease keeps it, as
// long as keys keep coming.
func TestRedisRebuildRenewsLease(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.Single(t)
	clock := time.Unix(0, 0)
	r := mustRedis(t, rdb, "renew", 1000, 0.01, WithBatchSize(1), WithBuildLease(time.Minute),
		func(c *config) { c.now = func() time.Time { return clock } })
	err := r.Rebuild(ctx, func(yield func(string, error) bool) {
		for i := range 3 {
			// As if most of the lease had run out while the source was
			// busy: Redis shortens the lease, the clock moves on.
			if err := rdb.PExpire(ctx, "{renew}:build", 5*time.Second).Err(); err != nil {
				t.Error(err)
			}
			clock = clock.Add(55 * time.Second)
			if !yield(strconv.Itoa(i), nil) {
				return
			}
			if ttl, _ := rdb.PTTL(ctx, "{renew}:build").Result(); ttl < 50*time.Second {
				t.Errorf("lease not renewed after key %d: PTTL %v", i, ttl)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.MayContain(ctx, "2"); !ok || !r.Ready() {
		t.Fatal("rebuilt filter lacks its keys")
	}
}

func TestRedisRebuildFailure(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.Single(t)
	boom := errors.New("db gone")

	r := mustRedis(t, rdb, "fail", 1000, 1e-6, WithBatchSize(1))
	mustRebuild(t, r, []string{"old"})
	check := func(t *testing.T) {
		t.Helper()
		if ok, _ := r.MayContain(ctx, "old"); !ok || !r.Ready() {
			t.Fatal("failed rebuild replaced the serving filter")
		}
		if ok, _ := r.MayContain(ctx, "new:1"); ok {
			t.Fatal("failed rebuild leaked keys into the serving filter")
		}
		if n, _ := rdb.Exists(ctx, "{fail}:next", "{fail}:build").Result(); n != 0 {
			t.Fatalf("%d rebuild keys left behind", n)
		}
	}
	t.Run("source error", func(t *testing.T) {
		err := r.Rebuild(ctx, func(yield func(string, error) bool) {
			yield("new:1", nil)
			yield("", boom)
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Rebuild = %v, want the source error", err)
		}
		check(t)
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		err := r.Rebuild(cctx, func(yield func(string, error) bool) {
			yield("new:1", nil)
			cancel()
			yield("new:2", nil)
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Rebuild = %v, want context.Canceled", err)
		}
		check(t)
	})
	t.Run("lease lost", func(t *testing.T) {
		// The lease expiring mid-rebuild (the source stalled) is the same
		// state as its key being gone: Adds from then on skip next.
		err := r.Rebuild(ctx, func(yield func(string, error) bool) {
			yield("new:1", nil)
			rdb.Del(ctx, "{fail}:build")
			yield("new:2", nil)
		})
		if !errors.Is(err, ErrRebuildLost) {
			t.Fatalf("Rebuild = %v, want ErrRebuildLost", err)
		}
		check(t)
	})
	t.Run("lease lost before swap", func(t *testing.T) {
		err := r.Rebuild(ctx, func(yield func(string, error) bool) {
			yield("new:1", nil)
			rdb.Del(ctx, "{fail}:build")
		})
		if !errors.Is(err, ErrRebuildLost) {
			t.Fatalf("Rebuild = %v, want ErrRebuildLost", err)
		}
		check(t)
	})
	t.Run("taken over", func(t *testing.T) {
		// Another rebuild took the lease after ours expired: ours must not
		// swap and must not delete the other's work.
		err := r.Rebuild(ctx, func(yield func(string, error) bool) {
			yield("new:1", nil)
			rdb.Set(ctx, "{fail}:build", "someone-else", 0)
		})
		if !errors.Is(err, ErrRebuildLost) {
			t.Fatalf("Rebuild = %v, want ErrRebuildLost", err)
		}
		if v, _ := rdb.Get(ctx, "{fail}:build").Result(); v != "someone-else" {
			t.Fatalf("the other rebuild's lease was removed (%q)", v)
		}
		if err := r.Rebuild(ctx, keysFrom(nil)); !errors.Is(err, ErrRebuildInProgress) {
			t.Fatalf("Rebuild under another's lease = %v, want ErrRebuildInProgress", err)
		}
		rdb.Del(ctx, "{fail}:build", "{fail}:next")
		check(t)
	})
}

func TestRedisRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	_, rdb := redistest.Single(t)
	for _, name := range []string{"", "a{b", "c}"} {
		if _, err := NewRedis(ctx, rdb, name, 10, 0.01); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewRedis(name %q) = %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := NewRedis(ctx, nil, "x", 10, 0.01); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NewRedis(nil client) = %v, want ErrInvalidArgument", err)
	}
	// 1e9 keys at 0.1% need 1.4e10 bits: over the 2^32-bit string limit.
	if _, err := NewRedis(ctx, rdb, "huge", 1_000_000_000, 0.001); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("NewRedis(1e9 keys) = %v, want ErrTooLarge", err)
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 0 {
		t.Fatalf("refused filters left %d keys", n)
	}
}

// TestRedisScriptCacheFlushed: pipelined batches fall back to EVAL when the
// server forgot the scripts (restart, failover to a fresh node).
func TestRedisScriptCacheFlushed(t *testing.T) {
	ctx := context.Background()
	srv, rdb := redistest.RealSingle(t)
	r := mustRedis(t, rdb, "flush", 1000, 0.01, WithBatchSize(3))
	keys := present("row:", 10)
	mustRebuild(t, r, keys)
	srv.Client().ScriptFlush(ctx)
	if err := r.Add(ctx, present("more:", 10)...); err != nil {
		t.Fatal(err)
	}
	srv.Client().ScriptFlush(ctx)
	got, err := r.MayContainMany(ctx, append(keys, present("more:", 10)...))
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("key %d missing", i)
		}
	}
}

// TestRedisTopologies runs the shared-filter protocol on a single node and on
// a three-master cluster: every script names only keys of one hash tag, so a
// cluster serves it (a cross-slot script would fail with CROSSSLOT).
func TestRedisTopologies(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			ctx := context.Background()
			rdb := topo.New(t)
			for _, name := range []string{"users", "orders", "bloom:items"} {
				a := mustRedis(t, rdb, name, 5000, 0.01, WithBatchSize(100))
				b := mustRedis(t, rdb, name, 5000, 0.01)
				keys := present(name+":", 3000)
				// A rebuild with an Add through B in the middle: the swap
				// ORs B's delta in and RENAMEs, all within one slot.
				err := a.Rebuild(ctx, func(yield func(string, error) bool) {
					for i, k := range keys[:1000] {
						if i == 500 {
							if err := b.Add(ctx, keys[2999]); err != nil {
								t.Error(err)
							}
						}
						if !yield(k, nil) {
							return
						}
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := a.Add(ctx, keys[1000:2999]...); err != nil { // pipelined batches
					t.Fatal(err)
				}
				got, err := b.MayContainMany(ctx, keys)
				if err != nil {
					t.Fatal(err)
				}
				for i, ok := range got {
					if !ok {
						t.Fatalf("%s: %q added through A not found through B", name, keys[i])
					}
				}
				if rate := fpRate(t, b, absent(3, 5000)); rate > 0.05 {
					t.Fatalf("%s: %.3f of absent keys accepted", name, rate)
				}
				if ok, err := b.MayContain(ctx, keys[2999]); !ok || err != nil {
					t.Fatalf("%s: MayContain = %v, %v", name, ok, err)
				}
				if _, err := NewRedis(ctx, rdb, name, 50_000, 0.01); !errors.Is(err, ErrMismatch) {
					t.Fatalf("%s: mismatched open = %v, want ErrMismatch", name, err)
				}
				if err := b.Drop(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
