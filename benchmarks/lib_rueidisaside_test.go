package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidisaside"
)

// rueidisaside is rueidis's own cache-aside, used as its README shows:
// NewClient, then a TypedCacheAsideClient with JSON for the row type. Its
// Get reads through rueidis's client-side cache (DoCache); on a miss it
// takes a lease in the key itself (SET NX GET of a placeholder naming the
// client, kept alive in a marker key every ClientTTL/2, 10 s by default),
// loads and writes the value with a script that checks the lease is still
// its own. Every other caller, in this process or another, waits for the
// server's invalidation of the key (RESP3 tracking) and reads again. An
// absent row is cached as JSON null, as the README caches "_nil_", for the
// value TTL (it has no TTL of its own for absence). The value TTL is both
// the key's expiry in Redis and the most the process keeps its copy; there
// is no separate local TTL.
//
// With a local tier, the client-side cache has rueidis's default room
// (128 MiB per connection). Without one it cannot be turned off: its
// waiters are woken only by the invalidations the tracking delivers, and
// DisableCache switches the tracking off with the cache, leaving them to
// sleep until their deadline. The closest it allows is a cache of
// asideNoTierBytes per connection: every reply is evicted as soon as it
// lands, so every Get goes to Redis, while the server still tracks the keys
// read and notifies the waiters.
//
// The client is built through ClientOption.ClientBuilder with a wrapper
// that counts round trips (asideCounter). A FLUSHALL once left it hung: its
// invalidation callback calls Redis from the goroutine that reads replies.
// Calls are bounded by the caller's deadline (the storms give every call
// one), and Close by asideCloseWait, so a hung client never hangs a
// benchmark.
func openRueidisAside(tb testing.TB, cfg implConfig) *cacheImpl {
	opt := rueidisaside.ClientOption{ClientOption: rueidisOption(tb, cfg)}
	if !cfg.local {
		opt.ClientOption.CacheSizeEachConn = asideNoTierBytes
	}
	rt := &rtCounter{}
	opt.ClientBuilder = func(o rueidis.ClientOption) (rueidis.Client, error) {
		c, err := rueidis.NewClient(o)
		if err != nil {
			return nil, err
		}
		return asideCounter{Client: c, rt: rt}, nil
	}
	aside, err := rueidisaside.NewClient(opt)
	if err != nil {
		tb.Fatalf("rueidisaside: %v", err)
	}
	c := rueidisaside.NewTypedCacheAsideClient(aside,
		func(r *row) (string, error) {
			data, err := json.Marshal(r)
			return string(data), err
		},
		func(s string) (*row, error) {
			var r *row
			err := json.Unmarshal([]byte(s), &r)
			return r, err
		})
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			r, err := c.Get(ctx, cfg.ttl, cfg.prefix+key, func(ctx context.Context, _ string) (*row, error) {
				r, err := cfg.db.load(ctx, key)
				if errors.Is(err, errNoRow) {
					return nil, nil // cached as null
				}
				if err != nil {
					return nil, err
				}
				return &r, nil
			})
			switch {
			case err != nil:
				return row{}, err
			case r == nil:
				return row{}, errNoRow
			}
			return *r, nil
		},
		// rueidisaside has no write call: a write stores the value as its
		// Get would (the JSON string, with the value TTL).
		set: func(ctx context.Context, key string, r row) error {
			data, err := json.Marshal(r)
			if err != nil {
				return err
			}
			rc := aside.Client()
			return rc.Do(ctx, rc.B().Set().Key(cfg.prefix+key).Value(rueidis.BinaryString(data)).Px(cfg.ttl).Build()).Error()
		},
		del: func(ctx context.Context, key string) error { return c.Del(ctx, cfg.prefix+key) },
		close: func() {
			done := make(chan struct{})
			go func() {
				defer close(done)
				aside.Close()
			}()
			select {
			case <-done:
			case <-time.After(asideCloseWait):
				tb.Logf("rueidisaside: Close did not return within %v; left behind", asideCloseWait)
			}
		},
		rt: rt,
	}
}

const (
	// asideNoTierBytes is the client-side cache per connection of the rows
	// without a local tier: smaller than any reply, so none is kept.
	asideNoTierBytes = 1
	// asideCloseWait bounds Close, which sends a DEL of its marker key
	// without a deadline.
	asideCloseWait = 3 * time.Second
)

// asideCounter counts the round trips of rueidisaside's client the way the
// rueidis adapter counts its own: one per Do (a script's EVALSHA, and its
// EVAL after NOSCRIPT, are a Do each), one per DoCache not answered from
// the process's copy, carrying doCacheMissCmds commands. A DoCache that
// waited for another caller's identical request in flight counts nothing.
type asideCounter struct {
	rueidis.Client
	rt *rtCounter
}

func (c asideCounter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.rt.count(1)
	return c.Client.Do(ctx, cmd)
}

func (c asideCounter) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	res := c.Client.DoCache(ctx, cmd, ttl)
	if !res.IsCacheHit() {
		c.rt.count(doCacheMissCmds)
	}
	return res
}
