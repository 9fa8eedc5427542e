package benchmarks

import (
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/maypok86/otter/v2"
)

// otterStore is a cache.LocalStore on maypok86/otter v2, to measure it
// against the default ristretto store. Each entry carries its cost (bytes, as
// cacheguard counts them) and TTL, which otter's weigher and expiry
// calculator read back.
type otterStore[V any] struct {
	c *otter.Cache[string, otterEntry[V]]
}

type otterEntry[V any] struct {
	e    *cache.LocalEntry[V]
	cost uint32
	ttl  time.Duration
}

func newOtterStore[V any](maxBytes int64) *otterStore[V] {
	return &otterStore[V]{c: otter.Must(&otter.Options[string, otterEntry[V]]{
		MaximumWeight:    uint64(maxBytes),
		Weigher:          func(_ string, v otterEntry[V]) uint32 { return v.cost },
		ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[string, otterEntry[V]]) time.Duration { return e.Value.ttl }),
	})}
}

func (s *otterStore[V]) Get(key string) (*cache.LocalEntry[V], bool) {
	v, ok := s.c.GetIfPresent(key)
	return v.e, ok
}

func (s *otterStore[V]) Set(key string, e *cache.LocalEntry[V], cost int64, ttl time.Duration) {
	s.c.Set(key, otterEntry[V]{e: e, cost: uint32(min(cost, 1<<31)), ttl: ttl})
}

func (s *otterStore[V]) Del(key string) { s.c.Invalidate(key) }
func (s *otterStore[V]) Clear()         { s.c.InvalidateAll() }
func (s *otterStore[V]) Close()         {}

var _ cache.LocalStore[row] = (*otterStore[row])(nil)
