package cache

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// otterStore is the default LocalStore, on otter v2 (S3-FIFO eviction,
// weighed in bytes). It is configured so that it has no goroutine of its own:
// no expiry (the cache checks freshness itself against its coarse clock, and
// an entry past its stale bound is never served; it stays until overwritten
// or evicted by size), and its upkeep (applying buffered reads and writes to
// the eviction policy) runs on the calling goroutine instead of a new one. A
// Set, Del or Clear is visible to every Get once it returns, and a Get is a
// few atomic loads with no lock, so Close needs no lock against the calls
// still finishing: it only turns them into misses and no-ops.
type otterStore[V any] struct {
	c      *otter.Cache[string, *LocalEntry[V]]
	closed atomic.Bool
}

func newOtterStore[V any](maxBytes int64) (*otterStore[V], error) {
	c, err := otter.New(&otter.Options[string, *LocalEntry[V]]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       func(_ string, e *LocalEntry[V]) uint32 { return e.weight },
		Executor:      func(f func()) { f() },
	})
	if err != nil {
		return nil, fmt.Errorf("%w: local tier: %w", ErrInvalidOption, err)
	}
	return &otterStore[V]{c: c}, nil
}

func (s *otterStore[V]) Get(key string) (*LocalEntry[V], bool) {
	if s.closed.Load() {
		return nil, false
	}
	return s.c.GetIfPresent(key)
}

// Set ignores ttl (see otterStore). e is not shared yet: its weight is
// written here, once, before otter's weigher reads it.
func (s *otterStore[V]) Set(key string, e *LocalEntry[V], cost int64, _ time.Duration) {
	if s.closed.Load() {
		return
	}
	e.weight = uint32(min(max(cost, 1), math.MaxUint32))
	s.c.Set(key, e)
}

func (s *otterStore[V]) Del(key string) {
	if !s.closed.Load() {
		s.c.Invalidate(key)
	}
}

func (s *otterStore[V]) Clear() {
	if !s.closed.Load() {
		s.c.InvalidateAll()
	}
}

// Close drops every entry, so that a closed cache holds no values.
func (s *otterStore[V]) Close() {
	if !s.closed.Swap(true) {
		s.c.InvalidateAll()
	}
}
