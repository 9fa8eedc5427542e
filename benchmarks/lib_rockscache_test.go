package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/dtm-labs/rockscache"
)

// rockscache stores a hash per key (value, lockUntil, lockOwner) and reads it
// with a Lua script sent in full (EVAL) on every call. Values are strings:
// rows are JSON-encoded by the adapter, and an empty string is its cached
// absence. Its defaults are kept (LockSleep 100 ms between polls of a locked
// key, weak consistency), except:
//
//   - the expire passed to Fetch is ttl + Delay + 1 s, because rockscache
//     subtracts Delay, subtracts up to 10 % as jitter, then truncates to whole
//     seconds (a 1 s TTL passed as such would expire at once);
//   - Delay (how long a deleted key lingers) is 1 s instead of 10 s when the
//     scenario's TTL is under a minute, so that short TTLs stay positive.
func openRocks(tb testing.TB, cfg implConfig) *cacheImpl {
	rdb, rt := cfg.plainClient(tb)
	opts := rockscache.NewDefaultOptions()
	opts.EmptyExpire = cfg.nullTTL
	if cfg.ttl < time.Minute {
		opts.Delay = time.Second
	}
	expire := cfg.ttl + opts.Delay + time.Second
	c := rockscache.NewClient(rdb, opts)
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			s, err := c.Fetch2(ctx, cfg.prefix+key, expire, func() (string, error) {
				r, err := cfg.db.load(ctx, key)
				if errors.Is(err, errNoRow) {
					return "", nil // cached as empty for EmptyExpire
				}
				if err != nil {
					return "", err
				}
				b, err := json.Marshal(r)
				return string(b), err
			})
			if err != nil {
				return row{}, err
			}
			if s == "" {
				return row{}, errNoRow
			}
			var r row
			err = json.Unmarshal([]byte(s), &r)
			return r, err
		},
		set: func(ctx context.Context, key string, r row) error {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			return c.RawSet(ctx, cfg.prefix+key, string(b), cfg.ttl)
		},
		del:   func(ctx context.Context, key string) error { return c.TagAsDeleted2(ctx, cfg.prefix+key) },
		close: func() {},
		rt:    rt,
	}
}
