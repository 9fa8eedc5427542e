package localstoretest

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
)

// NewStore returns an empty store with room for maxBytes of entries (the
// sum of the costs given to Set). Run closes every store it gets, twice.
type NewStore func(t *testing.T, maxBytes int64) cache.LocalStore[string]

// Patience bounds each wait for a Set to become visible in a store that
// applies Sets later: generous, so that a loaded machine never fails a
// correct store.
const Patience = 10 * time.Second

// roomy is the size of the stores of the checks that need room: far more
// than they Set.
const roomy = 1 << 20

// open makes a store that is closed twice when t ends.
func open(t *testing.T, newStore NewStore, maxBytes int64) cache.LocalStore[string] {
	t.Helper()
	s := newStore(t, maxBytes)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	t.Cleanup(func() {
		s.Close()
		s.Close()
	})
	return s
}

// entry returns a new entry whose value names key and n.
func entry(key string, n int) *cache.LocalEntry[string] {
	return &cache.LocalEntry[string]{Value: key + "|" + strconv.Itoa(n)}
}

// parse returns the key and n an entry was made for, and false for an
// entry that entry did not make.
func parse(e *cache.LocalEntry[string]) (key string, n int, ok bool) {
	i := strings.LastIndexByte(e.Value, '|')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(e.Value[i+1:])
	return e.Value[:i], n, err == nil
}

func key(i int) string { return "k" + strconv.Itoa(i) }

// waitFor waits until Get(k) returns e.
func waitFor(t *testing.T, s cache.LocalStore[string], k string, e *cache.LocalEntry[string]) {
	t.Helper()
	pause := 50 * time.Microsecond
	for deadline := time.Now().Add(Patience); ; {
		if got, ok := s.Get(k); ok && got == e {
			return
		}
		if time.Now().After(deadline) {
			got, ok := s.Get(k)
			t.Fatalf("Get(%q) = %v, %v for %v after its Set, want the entry Set (%q)", k, got, ok, Patience, e.Value)
		}
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

var sentinels atomic.Int64

// settle Sets a new key and waits until Get returns it: a store that applies
// Sets in order (ristretto does) has then applied everything queued before.
// The store must have room.
func settle(t *testing.T, s cache.LocalStore[string]) {
	t.Helper()
	k := fmt.Sprint("sentinel:", sentinels.Add(1))
	e := entry(k, 0)
	s.Set(k, e, 1, time.Minute)
	waitFor(t, s, k, e)
}

// mustMiss fails unless Get(k) misses.
func mustMiss(t *testing.T, s cache.LocalStore[string], k, when string) {
	t.Helper()
	if got, ok := s.Get(k); ok {
		t.Fatalf("Get(%q) %s returned %q, want a miss", k, when, got.Value)
	}
}
