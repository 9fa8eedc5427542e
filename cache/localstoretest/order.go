package localstoretest

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// Once Del returned, no entry Set before it is returned: entries Set once or
// twice, seen or maybe still queued in the store when the Del comes.
func testDelHidesEarlierSets(t *testing.T, s cache.LocalStore[string]) {
	const keys = 16
	for i := range 1000 {
		k := key(i % keys)
		e := entry(k, i)
		switch i % 3 {
		case 0:
			s.Set(k, e, 100, time.Minute)
			waitFor(t, s, k, e) // applied before the Del
		case 1:
			s.Set(k, e, 100, time.Minute) // maybe still queued
		case 2:
			// Two Sets, maybe both queued (a store may then keep
			// either: the second may be dropped).
			s.Set(k, entry(k, -i), 100, time.Minute)
			s.Set(k, e, 100, time.Minute)
		}
		s.Del(k)
		mustMiss(t, s, k, "right after its Del")
	}
	settle(t, s)
	for i := range keys {
		mustMiss(t, s, key(i), "after its Del, once the store applied what was queued")
	}
}

// Once Clear returned, no entry Set before it is returned.
func testClearHidesEarlierSets(t *testing.T, s cache.LocalStore[string]) {
	const keys = 100
	for round := range 20 {
		for i := range keys {
			e := entry(key(i), round)
			s.Set(key(i), e, 100, time.Minute)
			if i < keys/2 {
				waitFor(t, s, key(i), e) // half applied, half maybe queued
			}
		}
		s.Clear()
		for i := range keys {
			mustMiss(t, s, key(i), "right after Clear")
		}
		settle(t, s)
		for i := range keys {
			mustMiss(t, s, key(i), "after Clear, once the store applied what was queued")
		}
	}
	s.Clear() // of a cleared store
}

// Writers keep Setting a few keys while Del and Clear are called: an entry
// whose Set returned before a Del or Clear was called is never returned
// after it returned. Each writer numbers its entries and publishes, per
// key, the last number whose Set returned; what Get returns is compared
// with the numbers read before the Del or Clear was called.
func testWithConcurrentSets(t *testing.T, s cache.LocalStore[string]) {
	const writers, keys, rounds = 4, 4, 400
	var done [writers][keys]atomic.Int64 // last n whose Set returned, per writer and key
	for w := range writers {
		for k := range keys {
			done[w][k].Store(-1)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				k := n % keys
				// The entry's number names the writer too.
				s.Set(key(k), entry(key(k), n*writers+w), 100, time.Minute)
				done[w][k].Store(int64(n))
				runtime.Gosched()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	var before [writers][keys]int64
	check := func(k int, what string) {
		t.Helper()
		got, ok := s.Get(key(k))
		if !ok {
			return
		}
		gk, wn, valid := parse(got)
		if !valid || gk != key(k) || wn < 0 {
			t.Fatalf("Get(%q) returned %q, an entry never Set for that key", key(k), got.Value)
		}
		w, n := wn%writers, wn/writers
		if int64(n) <= before[w][k] {
			t.Fatalf("Get(%q) after %s returned %q, whose Set returned before the %s was called (writer %d had Set up to %d)",
				key(k), what, got.Value, what, w, before[w][k])
		}
	}
	for i := range rounds {
		for w := range writers {
			for k := range keys {
				before[w][k] = done[w][k].Load()
			}
		}
		if i%10 == 9 {
			s.Clear()
			for k := range keys {
				check(k, "Clear")
			}
			continue
		}
		k := i % keys
		s.Del(key(k))
		check(k, "Del")
	}
}
