package local

import (
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/kind"

	"github.com/dgraph-io/ristretto/v2"
)

// RistrettoStore is the Store that WithLocalRistretto picks, on
// ristretto v2 (TinyLFU admission, sampled LFU eviction, cost in bytes).
// Ristretto stores a new key later, on a goroutine of its own, and its
// Close closes channels that its other calls send on. So:
//
//   - Del waits for that goroutine (ristretto's Wait) after deleting: a Set
//     that returned before the Del may still be queued, and would store its
//     entry after the Del returned. Clear discards the queued Sets itself.
//   - Get, Set and Del hold a read lock; Close takes it for writing, and so
//     does Clear (ristretto's Clear stops and restarts its goroutine and is
//     not atomic against other calls). Calls after Close do nothing.
//   - Entries are stored without ristretto's TTL: with one, every Get reads
//     the wall clock. The cache checks freshness itself (see OtterStore),
//     and ristretto's expiry sweep runs every 12 hours instead of every
//     2.5 s, finding nothing.
//
// A Set of a new key is visible once ristretto's goroutine applied it, if
// its admission policy kept it.
type RistrettoStore[V any] struct {
	c        *ristretto.Cache[string, *Entry[V]]
	maxBytes int64
	mu       sync.RWMutex
	closed   bool
}

// ristrettoSweepSecs sets ristretto's expiry sweep to run every 12 hours
// (ristretto ticks every half of it).
const ristrettoSweepSecs = 24 * 3600

// ristrettoEntryBytes is the entry size that sizes ristretto's frequency
// counters (ten per entry expected, as ristretto advises, about 3 bytes
// each), for between ristrettoMinEntries and ristrettoMaxEntries entries.
const (
	ristrettoEntryBytes = 256
	ristrettoMinEntries = 1000
	ristrettoMaxEntries = 1 << 22
)

func NewRistrettoStore[V any](maxBytes int64) (*RistrettoStore[V], error) {
	entries := min(max(maxBytes/ristrettoEntryBytes, ristrettoMinEntries), ristrettoMaxEntries)
	c, err := ristretto.NewCache(&ristretto.Config[string, *Entry[V]]{
		NumCounters:            entries * 10,
		MaxCost:                maxBytes,
		BufferItems:            64,
		IgnoreInternalCost:     true, // cost is the entry's bytes as the cache weighs them
		TtlTickerDurationInSec: ristrettoSweepSecs,
	})
	if err != nil {
		return nil, kind.Errorf("%w: local tier: ristretto: %w", errs.ErrInvalidOption, err)
	}
	return &RistrettoStore[V]{c: c, maxBytes: maxBytes}, nil
}

func (s *RistrettoStore[V]) Get(key string) (*Entry[V], bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, false
	}
	return s.c.Get(key)
}

// Set ignores ttl (see RistrettoStore). An entry that costs more than the
// whole store is dropped here: ristretto refuses a new key that big, but
// replaces a stored key's entry whatever its cost.
func (s *RistrettoStore[V]) Set(key string, e *Entry[V], cost int64, _ time.Duration) {
	if cost > s.maxBytes {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.c.Set(key, e, max(cost, 1))
	}
}

func (s *RistrettoStore[V]) Del(key string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.c.Del(key)
		s.c.Wait()
	}
}

func (s *RistrettoStore[V]) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.c.Clear()
	}
}

// Close drops every entry and ends ristretto's goroutines.
func (s *RistrettoStore[V]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.c.Close()
	}
}
