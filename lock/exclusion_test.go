package lock

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cacheguard/cacheguard/internal/redistest"
)

const (
	exclProcs      = 3
	exclGoroutines = 8
	exclTotal      = 3000
	envAddrs       = "LOCK_TEST_ADDRS"
	counterKey     = "res:{fenced}:counter"
	refusedKey     = "res:{fenced}:refused"
)

// testExclusion runs 3 processes of 8 goroutines that increment a plain
// counter (GET, pause, SET: lost updates if two overlap) under one Mutex.
// Each holder also writes to a resource guarded by its fencing token. The
// count must be exact, the resource must have refused nothing, and the tokens
// it saw must be strictly increasing.
func testExclusion(t *testing.T, rdb redis.UniversalClient) {
	// miniredis starts a fresh Lua VM for every script: 3000 contended
	// increments from three processes outlast the test's deadline on it.
	redistest.NeedServer(t)
	ctx := testCtx(t)
	rdb.Del(ctx, counterKey, refusedKey, resourceKeys[0], resourceKeys[1])
	start := time.Now()
	redistest.Subprocesses(t, ctx, exclProcs, "TestTopologies",
		envRole+"="+roleExclusion,
		envAddrs+"="+redistest.Spec(rdb))
	t.Logf("%d increments by %d processes x %d goroutines in %v",
		exclTotal, exclProcs, exclGoroutines, time.Since(start))
	if n, err := rdb.Get(ctx, counterKey).Int(); err != nil || n != exclTotal {
		t.Fatalf("counter = %d (%v), want %d", n, err, exclTotal)
	}
	if n, _ := rdb.Get(ctx, refusedKey).Int(); n != 0 {
		t.Fatalf("the resource refused %d stale tokens", n)
	}
	tokens, err := rdb.LRange(ctx, resourceKeys[1], 0, -1).Result()
	if err != nil || len(tokens) != exclTotal {
		t.Fatalf("resource saw %d tokens (%v), want %d", len(tokens), err, exclTotal)
	}
	last := int64(0)
	for _, s := range tokens {
		tok, _ := strconv.ParseInt(s, 10, 64)
		if tok <= last {
			t.Fatalf("token %d after %d", tok, last)
		}
		last = tok
	}
}

func exclusionChild(t *testing.T) {
	rdb := clientFromEnv(t)
	c := newClient(t, rdb)
	m := c.Mutex("counter")
	ctx, cancel := context.WithTimeout(context.Background(), testBound)
	defer cancel()
	per := exclTotal / exclProcs / exclGoroutines
	var wg sync.WaitGroup
	errs := make(chan error, exclGoroutines)
	for g := 0; g < exclGoroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := incrementUnderLock(ctx, rdb, m); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func incrementUnderLock(ctx context.Context, rdb redis.UniversalClient, m *Mutex) error {
	h, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	defer h.Unlock(ctx)
	v, err := rdb.Get(ctx, counterKey).Int()
	if err != nil && err != redis.Nil {
		return err
	}
	// The holder works for a while, sometimes long enough to sleep: an
	// overlapping holder would read the same value and lose an increment.
	if rand.N(4) == 0 {
		time.Sleep(time.Duration(rand.N(200)) * time.Microsecond)
	} else {
		runtime.Gosched()
	}
	ok, err := writeFenced(ctx, rdb, h.Token(), strconv.Itoa(v+1))
	if err != nil {
		return err
	}
	if !ok {
		rdb.Incr(ctx, refusedKey)
	}
	return rdb.Set(ctx, counterKey, v+1, 0).Err()
}

func isCluster(rdb redis.UniversalClient) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// clientFromEnv connects a child process to the parent's servers.
func clientFromEnv(t testing.TB) redis.UniversalClient {
	return redistest.FromSpec(t, os.Getenv(envAddrs), nil)
}
