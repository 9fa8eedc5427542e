package localstoretest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// After Close, Get misses and every other call does nothing.
func testCallsAfterClose(t *testing.T, s cache.LocalStore[string]) {
	e := entry("k", 0)
	s.Set("k", e, 100, time.Minute)
	waitFor(t, s, "k", e)
	s.Close()
	mustMiss(t, s, "k", "after Close")
	s.Set("k", entry("k", 1), 100, time.Minute)
	s.Set("new", entry("new", 0), 100, time.Minute)
	s.Del("k")
	s.Clear()
	s.Close()
	for range 10 {
		mustMiss(t, s, "k", "after Close and a Set")
		mustMiss(t, s, "new", "after Close and a Set")
		time.Sleep(time.Millisecond)
	}
}

// Close runs, twice at once, while goroutines call everything else: no call
// panics, and every Get that starts after a Close returned misses. Each
// goroutine goes on for a fixed number of calls after it saw the store
// closed. Repeated on new stores, for the races to show.
func testCloseRacingCalls(t *testing.T, newStore NewStore) {
	for range 20 {
		closeRacingCalls(t, open(t, newStore, roomy))
	}
}

func closeRacingCalls(t *testing.T, s cache.LocalStore[string]) {
	const workers, keys, after = 4, 32, 200
	var (
		closed atomic.Bool  // a Close returned
		calls  atomic.Int64 // calls made, to start closing once all run
		wg     sync.WaitGroup
		failed atomic.Pointer[string]
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for n, left := 0, after; left > 0; n++ {
				wasClosed := closed.Load()
				if wasClosed {
					left--
				}
				k := key(rnd.IntN(keys))
				switch op := rnd.IntN(100); {
				case op < 50:
					if got, ok := s.Get(k); ok && wasClosed {
						failed.CompareAndSwap(nil, ptr(fmt.Sprintf("Get(%q) returned %q after Close returned", k, got.Value)))
					}
				case op < 85:
					s.Set(k, entry(k, n), 100, time.Minute)
				case op < 99:
					s.Del(k)
				default:
					s.Clear()
				}
				calls.Add(1)
			}
		}()
	}
	for calls.Load() < workers*100 {
		time.Sleep(time.Millisecond)
	}
	var closers sync.WaitGroup
	for range 2 {
		closers.Add(1)
		go func() {
			defer closers.Done()
			s.Close()
			closed.Store(true)
		}()
	}
	closers.Wait()
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		t.Fatal(*msg)
	}
}

// Gets, Sets, Dels and Clears from many goroutines (a data race shows under
// -race): a Get returns an entry Set for its key, or a miss.
func testConcurrent(t *testing.T, s cache.LocalStore[string]) {
	const workers, keys, calls = 8, 64, 2000
	var wg sync.WaitGroup
	var failed atomic.Pointer[string]
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 2))
			for n := range calls {
				k := key(rnd.IntN(keys))
				switch op := rnd.IntN(100); {
				case op < 60:
					if got, ok := s.Get(k); ok {
						if gk, _, valid := parse(got); !valid || gk != k {
							failed.CompareAndSwap(nil, ptr(fmt.Sprintf("Get(%q) returned %q, an entry never Set for that key", k, got.Value)))
						}
					}
				case op < 90:
					s.Set(k, entry(k, n), int64(50+rnd.IntN(200)), time.Minute)
				case op < 99:
					s.Del(k)
				default:
					s.Clear()
				}
			}
		}()
	}
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		t.Fatal(*msg)
	}
}

func ptr(s string) *string { return &s }
