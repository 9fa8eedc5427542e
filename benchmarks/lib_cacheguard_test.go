package benchmarks

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/cache"
	cgmsgpack "github.com/cacheguard/cacheguard/codec/msgpack"
	"github.com/cacheguard/cacheguard/hotkey"
)

// Hot-key settings for the local tier: up to hotK keys, each needing
// hotMinCount reads within the detector's window (1 s by default) to be
// promoted. At the rates these benchmarks reach (tens of thousands of reads
// per second) that promotes the few hundred hottest rows of the zipfian
// trace.
const (
	hotK        = 1000
	hotMinCount = 10
)

func openCacheguard(tb testing.TB, cfg implConfig) *cacheImpl {
	rdb, rt := cfg.client(tb)
	opts := []cache.Option{
		cache.WithPrefix(cfg.prefix),
		cache.WithTTL(cfg.ttl),
		cache.WithNullTTL(cfg.nullTTL),
		cache.WithLogger(quietLog),
	}
	var det *hotkey.Detector
	if cfg.local && cfg.admitAll {
		opts = append(opts,
			cache.WithLocal(int64(cfg.localEntries)*256),
			cache.WithLocalAdmitAll(),
			cache.WithLocalTTL(cfg.localTTL))
	} else if cfg.local {
		var err error
		k, minCount := hotK, hotMinCount
		if cfg.hotK > 0 {
			k, minCount = cfg.hotK, cfg.hotMinCount
		}
		det, err = hotkey.New(hotkey.WithK(k), hotkey.WithMinCount(uint64(minCount)))
		if err != nil {
			tb.Fatal(err)
		}
		opts = append(opts,
			cache.WithLocal(int64(cfg.localEntries)*256),
			cache.WithHotKeys(det),
			cache.WithLocalTTL(cfg.localTTL))
	}
	switch cfg.codec {
	case "", "json": // the default
	case "msgpack":
		opts = append(opts, cache.WithCodec(cgmsgpack.Codec{}))
	default:
		tb.Fatalf("cacheguard: no codec %q", cfg.codec)
	}
	if cfg.bloom {
		opts = append(opts, cache.WithBloom(rowFilter(tb, cfg.db.rows)))
	}
	if cfg.replicaReads {
		opts = append(opts, cache.WithReplicaReads(time.Second))
	}
	if cfg.copies > 0 {
		var err error
		if det, err = hotkey.New(); err != nil {
			tb.Fatal(err)
		}
		opts = append(opts, cache.WithHotKeys(det), cache.WithHotKeyCopies(cfg.copies, time.Second))
	}
	c, err := cache.New(rdb, cache.Values[row]{}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if cfg.local {
		waitLocalTier(tb, c)
	}
	load := func(ctx context.Context, key string) (row, error) {
		r, err := cfg.db.load(ctx, key)
		if errors.Is(err, errNoRow) {
			return r, cache.ErrNotFound
		}
		return r, err
	}
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			r, err := c.Get(ctx, key, load)
			if errors.Is(err, cache.ErrNotFound) {
				return r, errNoRow
			}
			return r, err
		},
		set: func(ctx context.Context, key string, r row) error { return c.Set(ctx, key, r) },
		del: func(ctx context.Context, key string) error { return c.Delete(ctx, key) },
		close: func() {
			c.Close()
			det.Close()
		},
		rt: rt,
	}
}

// rowFilter returns a ready local Bloom filter holding the ids 0..rows-1.
func rowFilter(tb testing.TB, rows int) *bloom.Local {
	f, err := bloom.NewLocal(uint(rows), 0.01)
	if err != nil {
		tb.Fatal(err)
	}
	ids := func(yield func(string, error) bool) {
		for i := range rows {
			if !yield(strconv.Itoa(i), nil) {
				return
			}
		}
	}
	if err := f.Rebuild(context.Background(), ids); err != nil {
		tb.Fatal(err)
	}
	return f
}

// waitLocalTier waits until the cache's invalidation subscription is up: the
// local tier admits nothing before (the first subscription flushes it, which
// Stats counts).
func waitLocalTier[V any](tb testing.TB, c *cache.Cache[V]) {
	for deadline := time.Now().Add(5 * time.Second); c.Stats().LocalFlushes == 0; {
		if time.Now().After(deadline) {
			tb.Fatal("local tier: invalidation subscription not up after 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
