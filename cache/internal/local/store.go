// Package local is the in-process tier: decoded values of hot keys kept
// in process memory for a short, jittered local TTL, in a Store sized in
// bytes (otter v2 by default, ristretto v2 shipped, or the user's own). It
// is trusted only while the invalidation subscription (and, with tracking,
// every master's tracking) vouches for it: an epoch counter gates it (odd
// while a source is down), health replies bound how long it may serve
// (trust.go), and every admission is ordered against invalidations of its
// key (order.go). A fresh-expired entry may still answer while Redis
// fails, within its stale bound.
package local

import (
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
)

// Store is the tier's storage (cache.LocalStore documents its contract).
type Store[V any] interface {
	Get(key string) (*Entry[V], bool)
	// Set stores e with a cost in bytes; e is of use for ttl.
	Set(key string, e *Entry[V], cost int64, ttl time.Duration)
	Del(key string)
	Clear()
	Close()
}

// Entry is what the tier stores for a key (cache.LocalEntry).
type Entry[V any] struct {
	Value V
	Null  bool // a cached absence

	fresh int64  // unix nanos: served as a hit until then
	stale int64  // unix nanos: served only while Redis fails, until then
	epoch uint64 // subscription epoch it was admitted in
	// weight is the entry's cost in bytes as the default store weighs it
	// (otter.go).
	weight uint32

	// tagged is set for a tagged entry only: an untagged one (the usual
	// kind) pays one pointer for the feature, not a slice and a time.
	// Its tags are checked on every hit (tags.go).
	tagged *entry.Stamp
}
