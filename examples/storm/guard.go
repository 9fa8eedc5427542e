package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cacheguard/cacheguard/bloom"
	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/hotkey"
	"github.com/redis/go-redis/v9"
)

// guard is the cacheguard side of a run: one configuration for every storm,
// only the TTL changes with the scenario.
type guard struct {
	c    *cache.Cache[Item]
	hot  *hotkey.Detector
	load cache.Loader[Item]
	// background counts errors no caller saw (a fill that failed while
	// Redis restarted, say); the report shows them.
	background atomic.Int64
	mu         sync.Mutex
	samples    []string // the first few distinct background errors
}

// noteBackground counts an error no caller saw and keeps a few examples.
func (g *guard) noteBackground(err error) {
	g.background.Add(1)
	msg := err.Error()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.samples) < 3 && !slices.Contains(g.samples, msg) {
		g.samples = append(g.samples, msg)
	}
}

func (g *guard) backgroundSamples() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.samples)
}

// guardSettings are the knobs the scenarios share.
type guardSettings struct {
	ttl      time.Duration
	jitter   float64
	filter   cache.Filter
	hotCount uint64 // accesses per second that make a key hot
	dbConns  int    // the database's connections: the cap on loads at once
	noLocal  bool   // leave the local tier out
}

func newGuard(rdb redis.UniversalClient, prefix string, s guardSettings, load cache.Loader[Item]) (*guard, error) {
	hot, err := hotkey.New(
		hotkey.WithK(64),
		hotkey.WithWindow(time.Second),
		hotkey.WithTick(100*time.Millisecond),
		hotkey.WithMinCount(s.hotCount),
	)
	if err != nil {
		return nil, err
	}
	g := &guard{hot: hot, load: load}
	local := []cache.Option{cache.WithLocal(32 << 20), cache.WithHotKeys(hot)}
	if s.noLocal {
		local = nil
	}
	g.c, err = cache.New(rdb, cache.Values[Item]{}, append(local,
		cache.WithPrefix(prefix),
		cache.WithTTL(s.ttl),
		cache.WithJitter(s.jitter),
		cache.WithNullTTL(min(s.ttl, 30*time.Second)),
		cache.WithBloom(s.filter),
		// Never more loads at once than the database has connections, and
		// when Redis is down fail fast and let only that many through.
		cache.WithMaxLoads(s.dbConns),
		cache.WithCircuitBreaker(5, 200*time.Millisecond),
		cache.WithFallbackLoads(s.dbConns),
		// Errors no caller sees are counted and shown in the report; the
		// log would only repeat them line by line.
		cache.WithLogger(slog.New(slog.DiscardHandler)),
		cache.WithErrorHandler(func(err error) { g.noteBackground(err) }),
	)...)
	if err != nil {
		hot.Close()
		return nil, err
	}
	return g, nil
}

// Get reads key; a missing row is an answer, not an error.
func (g *guard) Get(ctx context.Context, key string) error {
	_, err := g.c.Get(ctx, key, g.load)
	if errors.Is(err, cache.ErrNotFound) {
		return nil
	}
	return err
}

// fill writes items through the cache (each with its own jittered TTL), a
// few at a time.
func (g *guard) fill(ctx context.Context, items []Item) error {
	return parallel(ctx, 16, len(items), func(i int) error {
		return g.c.Set(ctx, itemKey(items[i].ID), items[i])
	})
}

// Close stops the cache and the detector and waits for their goroutines.
func (g *guard) Close() error {
	return errors.Join(g.c.Close(), g.hot.Close())
}

// newFilter builds the local Bloom filter from every id in the database.
func newFilter(ctx context.Context, db *database) (*bloom.Local, error) {
	f, err := bloom.NewLocal(uint(db.rows), 0.001)
	if err != nil {
		return nil, err
	}
	if err := f.Rebuild(ctx, db.ids(ctx)); err != nil {
		return nil, fmt.Errorf("bloom warm-up: %w", err)
	}
	return f, nil
}

func itemKey(id int64) string { return strconv.FormatInt(id, 10) }

// parallel runs fn(0..n-1) on at most workers goroutines and returns the
// first error; it returns once all of them have stopped.
func parallel(ctx context.Context, workers, n int, fn func(i int) error) error {
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || inner.Err() != nil {
					errs <- nil
					return
				}
				if err := fn(i); err != nil {
					cancel()
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}
