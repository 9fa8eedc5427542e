package local

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/kind"

	"github.com/maypok86/otter/v2"
)

// OtterStore is the default Store, on otter v2 (S3-FIFO eviction,
// weighed in bytes). It is configured so that it has no goroutine of its own:
// no expiry (the cache checks freshness itself against its coarse clock, and
// an entry past its stale bound is never served; it stays until overwritten
// or evicted by size), and its upkeep (applying buffered reads and writes to
// the eviction policy) runs on the calling goroutine instead of a new one. A
// Set, Del or Clear is visible to every Get once it returns, and a Get is a
// few atomic loads with no lock, so Close needs no lock against the calls
// still finishing: it only turns them into misses and no-ops.
type OtterStore[V any] struct {
	c      *otter.Cache[string, *Entry[V]]
	closed atomic.Bool
}

func NewOtterStore[V any](maxBytes int64) (*OtterStore[V], error) {
	c, err := otter.New(&otter.Options[string, *Entry[V]]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       func(_ string, e *Entry[V]) uint32 { return e.weight },
		Executor:      func(f func()) { f() },
	})
	if err != nil {
		return nil, kind.Errorf("%w: local tier: %w", errs.ErrInvalidOption, err)
	}
	return &OtterStore[V]{c: c}, nil
}

func (s *OtterStore[V]) Get(key string) (*Entry[V], bool) {
	if s.closed.Load() {
		return nil, false
	}
	return s.c.GetIfPresent(key)
}

// Set ignores ttl (see OtterStore). e is not shared yet: its weight is
// written here, once, before otter's weigher reads it.
func (s *OtterStore[V]) Set(key string, e *Entry[V], cost int64, _ time.Duration) {
	if s.closed.Load() {
		return
	}
	e.weight = uint32(min(max(cost, 1), math.MaxUint32))
	s.c.Set(key, e)
}

func (s *OtterStore[V]) Del(key string) {
	if !s.closed.Load() {
		s.c.Invalidate(key)
	}
}

func (s *OtterStore[V]) Clear() {
	if !s.closed.Load() {
		s.c.InvalidateAll()
	}
}

// Close drops every entry, so that a closed cache holds no values.
func (s *OtterStore[V]) Close() {
	if !s.closed.Swap(true) {
		s.c.InvalidateAll()
	}
}
