package consistency

import (
	"context"
	"errors"
	"fmt"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/internal/kind"
)

// VersionedCache is the part of *cache.Cache[V] that versioned writes use:
// stores that land only if their version is newer than the stored one, and
// deletes that leave a tombstone carrying their version.
type VersionedCache[V any] interface {
	SetVersioned(ctx context.Context, key string, v V, version uint64) (bool, error)
	DeleteVersioned(ctx context.Context, key string, version uint64) (bool, error)
}

// ErrZeroVersion is returned for a versioned write with version 0, the
// version of entries filled by ordinary reads: it could never win. It wraps
// ErrInvalidArgument.
var ErrZeroVersion = fmt.Errorf("%w: version 0 is reserved for ordinary fills", ErrInvalidArgument)

// Versioned writes values through to a cache newest-wins, for writers that
// update one key concurrently and may reach Redis out of order: each write
// carries the version the database gave the row (a version column bumped by
// every UPDATE, a commit timestamp, an id from a sequence), and the cache
// keeps the highest. It is the "lock plus timestamp" answer without the
// lock: the compare is one script on one key.
//
// When Redis fails a versioned write, the cache may still hold an older
// value. If a fallback Target is given, the key is then invalidated through
// it (retried through the queue if that fails too), so the older value does
// not outlive the failure; the next read loads the row afresh.
type Versioned[V any] struct {
	c        VersionedCache[V]
	fallback *Target
}

// NewVersioned returns a Versioned writing to c, with fallback (may be nil)
// for the deletes that follow a failed write.
func NewVersioned[V any](c VersionedCache[V], fallback *Target) (*Versioned[V], error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil versioned cache", ErrInvalidArgument)
	}
	return &Versioned[V]{c: c, fallback: fallback}, nil
}

// Set stores v under key if version is newer than the stored version or
// tombstone, and reports whether it did. A refusal is not an error: a newer
// write got there first.
func (w *Versioned[V]) Set(ctx context.Context, key string, v V, version uint64) (bool, error) {
	if version == 0 {
		return false, ErrZeroVersion
	}
	ok, err := w.c.SetVersioned(ctx, key, v, version)
	if err != nil {
		w.invalidateAfter(ctx, key, err)
		return false, err
	}
	return ok, nil
}

// Delete replaces the entry with a tombstone carrying version, so that a set
// older than the delete is refused if it arrives later. It reports false if a
// newer version is stored.
func (w *Versioned[V]) Delete(ctx context.Context, key string, version uint64) (bool, error) {
	if version == 0 {
		return false, ErrZeroVersion
	}
	ok, err := w.c.DeleteVersioned(ctx, key, version)
	if err != nil {
		w.invalidateAfter(ctx, key, err)
		return false, err
	}
	return ok, nil
}

// Write runs write, the database write, which returns the row as stored and
// its new version, then stores it with Set. If write fails, the key is
// invalidated through the fallback (the write may have committed) and
// write's error is returned.
func (w *Versioned[V]) Write(ctx context.Context, key string, write func(ctx context.Context) (V, uint64, error)) error {
	if write == nil {
		return errors.New("cacheguard: consistency: Write: nil write")
	}
	v, version, err := write(ctx)
	if err != nil {
		w.invalidateAfter(ctx, key, err)
		return err
	}
	_, err = w.Set(ctx, key, v, version)
	return err
}

// Remove runs remove, the database delete, which returns the version of the
// deletion (the row's last version plus one, say), then leaves a tombstone
// with Delete.
func (w *Versioned[V]) Remove(ctx context.Context, key string, remove func(ctx context.Context) (uint64, error)) error {
	if remove == nil {
		return errors.New("cacheguard: consistency: Remove: nil remove")
	}
	version, err := remove(ctx)
	if err != nil {
		w.invalidateAfter(ctx, key, err)
		return err
	}
	_, err = w.Delete(ctx, key, version)
	return err
}

// invalidateAfter invalidates key through the fallback after a failure that may
// have left an older value cached.
func (w *Versioned[V]) invalidateAfter(ctx context.Context, key string, cause error) {
	if w.fallback == nil || key == "" {
		return
	}
	// Refused before anything was written: the versioned cache's own bad
	// key or tags.
	if errors.Is(cause, ErrZeroVersion) || errors.Is(cause, cache.ErrInvalidArgument) {
		return
	}
	if err := w.fallback.Invalidate(ctx, key); err != nil {
		w.fallback.q.report(w.fallback.name, []string{key}, kind.Errorf("cacheguard: consistency: invalidate after a failed versioned write (%v): %w", cause, err))
	}
}
