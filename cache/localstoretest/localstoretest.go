// Package localstoretest checks an implementation of cache.LocalStore
// against the contract the cache relies on (see cache.LocalStore), so that
// a store of your own can be plugged in with cache.Values.LocalStore knowing
// it keeps the local tier's bounds. The cache's tests run it against both
// built-in stores (otter, the default, and ristretto):
//
//	func TestMyStore(t *testing.T) {
//		localstoretest.Run(t, func(t *testing.T, maxBytes int64) cache.LocalStore[string] {
//			return mystore.New(maxBytes)
//		})
//	}
//
// What it checks, each in a subtest:
//
//   - SetThenGet: with room, a Set is kept and Get returns that very entry,
//     at once or, for a store that applies Sets later, once it did; a
//     second Set of a key replaces the first; an absent key misses.
//   - DelHidesEarlierSets, ClearHidesEarlierSets: once Del or Clear
//     returned, no entry Set before it is returned, neither at once nor
//     after the store applied everything queued before.
//   - DelAndClearWithConcurrentSets: the same while other goroutines keep
//     Setting the keys: an entry whose Set returned before Del or Clear was
//     called is never returned after it returned.
//   - TTL: with room, an entry Set for an hour is still there a moment
//     later; past its ttl, Get returns the entry or a miss, nothing else
//     (stores need not expire entries).
//   - CostBound: the costs of the entries a store holds stay within its
//     size (with a quarter of slack), and an entry bigger than the whole
//     store is not kept, neither for a new key nor replacing an entry.
//   - CallsAfterClose, CloseRacingCalls: Close may race every other call
//     and be called twice; every Get that starts after a Close returned
//     misses, and no call panics.
//   - Concurrent: Gets, Sets, Dels and Clears from many goroutines (run
//     it under -race): a Get returns an entry Set for that key or a miss.
//
// Every assertion is about what the store returned and in what order calls
// returned, never about how fast it was: the only waits are for a Set to
// become visible, bounded by Patience, and they can only make a check pass
// late, never fail one that a correct store passes.
package localstoretest

import (
	"slices"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// Run checks the store newStore makes against the LocalStore contract, in
// subtests of t.
func Run(t *testing.T, newStore NewStore) {
	t.Run("SetThenGet", func(t *testing.T) { testSetThenGet(t, open(t, newStore, roomy)) })
	t.Run("DelHidesEarlierSets", func(t *testing.T) { testDelHidesEarlierSets(t, open(t, newStore, roomy)) })
	t.Run("ClearHidesEarlierSets", func(t *testing.T) { testClearHidesEarlierSets(t, open(t, newStore, roomy)) })
	t.Run("DelAndClearWithConcurrentSets", func(t *testing.T) { testWithConcurrentSets(t, open(t, newStore, roomy)) })
	t.Run("TTL", func(t *testing.T) { testTTL(t, open(t, newStore, roomy)) })
	t.Run("CostBound", func(t *testing.T) { testCostBound(t, newStore) })
	t.Run("CallsAfterClose", func(t *testing.T) { testCallsAfterClose(t, open(t, newStore, roomy)) })
	t.Run("CloseRacingCalls", func(t *testing.T) { testCloseRacingCalls(t, newStore) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, open(t, newStore, roomy)) })
}

func testSetThenGet(t *testing.T, s cache.LocalStore[string]) {
	const n = 200
	for round := range 2 { // the second round replaces every entry
		es := make([]*cache.LocalEntry[string], n)
		for i := range es {
			es[i] = entry(key(i), round)
			s.Set(key(i), es[i], 100, time.Minute)
		}
		for i, e := range es {
			waitFor(t, s, key(i), e)
		}
	}
	mustMiss(t, s, "never set", "of a key never Set")
}

func testTTL(t *testing.T, s cache.LocalStore[string]) {
	long := entry("long", 0)
	s.Set("long", long, 100, time.Hour)
	waitFor(t, s, "long", long)
	short := entry("short", 0)
	s.Set("short", short, 100, time.Millisecond)
	settle(t, s)
	time.Sleep(20 * time.Millisecond) // past short's ttl
	if got, ok := s.Get("long"); !ok || got != long {
		t.Fatalf("an entry Set with a ttl of an hour: Get = %v, %v a moment later, want it kept", got, ok)
	}
	if got, ok := s.Get("short"); ok && got != short {
		t.Fatalf("past its ttl, Get returned %q, want the entry Set or a miss", got.Value)
	}
}

func testCostBound(t *testing.T, newStore NewStore) {
	const maxBytes, cost, n = 64 << 10, 512, 1024 // n entries of 8 times the size
	s := open(t, newStore, maxBytes)
	for i := range n {
		s.Set(key(i), entry(key(i), 0), cost, time.Minute)
	}
	// A sweep of Gets over the keys is a snapshot only while the store does
	// not change (one that applies Sets later may still be evicting): it is
	// repeated until two in a row find the same entries.
	sweep := func() []bool {
		held := make([]bool, n)
		for i := range held {
			_, held[i] = s.Get(key(i))
		}
		return held
	}
	held := sweep()
	for deadline := time.Now().Add(Patience); ; {
		time.Sleep(5 * time.Millisecond)
		again := sweep()
		if slices.Equal(held, again) {
			break
		}
		held = again
		if time.Now().After(deadline) {
			t.Fatalf("the entries held still changed %v after the last Set", Patience)
		}
	}
	count := 0
	for _, h := range held {
		if h {
			count++
		}
	}
	if limit := maxBytes + maxBytes/4; count*cost > limit {
		t.Fatalf("a store of %d bytes held %d entries of %d bytes (%d bytes), want at most %d", maxBytes, count, cost, count*cost, limit)
	}
	t.Logf("held %d of %d entries of %d bytes in %d bytes", count, n, cost, maxBytes)

	// Too big, as a new key and as a replacement: the store may keep the
	// entry it had, never the big one.
	s = open(t, newStore, maxBytes)
	s.Set("big", entry("big", 0), 2*maxBytes, time.Minute)
	small, huge := entry("small", 0), entry("small", 1)
	s.Set("small", small, cost, time.Minute)
	waitFor(t, s, "small", small)
	s.Set("small", huge, 2*maxBytes, time.Minute)
	for range 2 { // at once, and once the store applied what was queued
		mustMiss(t, s, "big", "of an entry twice the store's size")
		if got, ok := s.Get("small"); ok && got == huge {
			t.Fatal("a store replaced an entry with one twice its size")
		}
		settle(t, s)
	}
}
