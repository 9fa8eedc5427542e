package benchmarks

import (
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/dgraph-io/ristretto/v2"
)

// ristrettoStore is a cache.LocalStore on ristretto v2, plugged in with
// WithLocalStore, to measure the default store (otter v2) against it. It is
// configured as a ristretto local tier must be: cost in bytes, no TTL (the
// cache checks freshness itself), a read lock against Close (ristretto's
// Close closes channels that its other calls send on) and a Wait in Del (a
// Del that comes before ristretto applied the key's Set would delete nothing).
type ristrettoStore[V any] struct {
	c      *ristretto.Cache[string, *cache.LocalEntry[V]]
	mu     sync.RWMutex
	closed bool
}

func newRistrettoStore[V any](maxBytes int64) *ristrettoStore[V] {
	c, err := ristretto.NewCache(&ristretto.Config[string, *cache.LocalEntry[V]]{
		NumCounters: maxBytes / 256 * 10, MaxCost: maxBytes, BufferItems: 64,
		IgnoreInternalCost: true, TtlTickerDurationInSec: 24 * 3600,
	})
	if err != nil {
		panic(err)
	}
	return &ristrettoStore[V]{c: c}
}

func (s *ristrettoStore[V]) Get(key string) (*cache.LocalEntry[V], bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, false
	}
	return s.c.Get(key)
}

func (s *ristrettoStore[V]) Set(key string, e *cache.LocalEntry[V], cost int64, _ time.Duration) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.c.Set(key, e, cost)
	}
}

func (s *ristrettoStore[V]) Del(key string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.c.Del(key)
		s.c.Wait()
	}
}

func (s *ristrettoStore[V]) Clear() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.c.Clear()
	}
}

func (s *ristrettoStore[V]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.c.Close()
	}
}

var _ cache.LocalStore[row] = (*ristrettoStore[row])(nil)
