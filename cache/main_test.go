package cache

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/cacheguard/cacheguard/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	// Tests that kill servers or connections make go-redis log every failed
	// dial and read.
	redistest.MainQuiet(m)
}

var (
	onTopologies = redistest.OnTopologies
	prefixFor    = redistest.Prefix
)

func newCache[V any](t *testing.T, rdb redis.UniversalClient, opts ...Option) *Cache[V] {
	t.Helper()
	return newCacheWith(t, rdb, Values[V]{}, opts...)
}

// newCacheWith is newCache with values (tags, a TTL function, a store).
func newCacheWith[V any](t *testing.T, rdb redis.UniversalClient, values Values[V], opts ...Option) *Cache[V] {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// A hook set of its own, which the test may fill in (or replace with
	// withHooks) before the cache is used.
	c, err := New(rdb, values, append([]Option{WithPrefix(prefixFor(t)), WithLogger(quiet), withHooks(&hooks{})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// countingLoader counts its calls and returns rows from a map.
type countingLoader[V any] struct {
	calls atomic.Int64
	rows  map[string]V
}

func (l *countingLoader[V]) load(_ context.Context, key string) (V, error) {
	l.calls.Add(1)
	v, ok := l.rows[key]
	if !ok {
		return v, ErrNotFound
	}
	return v, nil
}

// newSingle starts a private single node (tests that kill it, or need
// miniredis's clock, must not share one).
func newSingle(t *testing.T) (*redistest.Server, redis.UniversalClient) {
	return redistest.Single(t)
}

func newSingleB(b *testing.B) (*redistest.Server, redis.UniversalClient) { return redistest.Single(b) }
