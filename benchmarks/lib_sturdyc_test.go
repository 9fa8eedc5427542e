package benchmarks

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/viccon/sturdyc"
)

// sturdyc is an in-process cache first: GetOrFetch reads its sharded
// memory, and on a miss (one call per key in the process) its distributed
// storage, here Redis through go-redis, before the loader. It has no switch
// for the in-process tier, and none of its users would shrink that tier's
// TTL to nothing, so it runs only where the row has a local tier
// (library.localOnly): localEntries rows fresh for localTTL. Absent rows are
// cached (WithMissingRecordStorage); the distributed storage is written
// asynchronously after a load, as sturdyc does. Continuous evictions are
// off: their goroutine never exits, and a full shard evicts on write anyway.
func openSturdyc(tb testing.TB, cfg implConfig) *cacheImpl {
	if !cfg.local {
		tb.Fatal("sturdyc: runs only with its memory tier (library.localOnly)")
	}
	rdb, rt := cfg.client(tb)
	entries, ttl := cfg.localEntries, cfg.localTTL
	st := sturdyStorage{rdb: rdb, prefix: cfg.prefix, ttl: cfg.ttl}
	c := sturdyc.New[row](entries, 16, ttl, 10,
		sturdyc.WithDistributedStorage(st),
		sturdyc.WithMissingRecordStorage(),
		sturdyc.WithNoContinuousEvictions(),
		sturdyc.WithEvictionInterval(time.Second), // unused; New refuses 0
		sturdyc.WithLog(quietLog))
	return &cacheImpl{
		get: func(ctx context.Context, key string) (row, error) {
			r, err := c.GetOrFetch(ctx, key, func(ctx context.Context) (row, error) {
				r, err := cfg.db.load(ctx, key)
				if errors.Is(err, errNoRow) {
					return r, sturdyc.ErrNotFound
				}
				return r, err
			})
			if errors.Is(err, sturdyc.ErrMissingRecord) || errors.Is(err, sturdyc.ErrNotFound) {
				return r, errNoRow
			}
			return r, err
		},
		// sturdyc has no call that writes its distributed storage: a
		// write stores the record in the layout sturdyc reads back (a
		// JSON object with created_at, value and is_missing_record) and
		// replaces the process's copy.
		set: func(ctx context.Context, key string, r row) error {
			data, err := json.Marshal(sturdyRecord{CreatedAt: time.Now(), Value: r})
			if err != nil {
				return err
			}
			if err := rdb.Set(ctx, cfg.prefix+key, data, cfg.ttl).Err(); err != nil {
				return err
			}
			c.Set(key, r)
			return nil
		},
		del: func(ctx context.Context, key string) error {
			c.Delete(key)
			return rdb.Del(ctx, cfg.prefix+key).Err()
		},
		close: func() {},
		rt:    rt,
	}
}

// sturdyRecord is the layout of sturdyc's records in its distributed
// storage.
type sturdyRecord struct {
	CreatedAt       time.Time `json:"created_at"`
	Value           row       `json:"value"`
	IsMissingRecord bool      `json:"is_missing_record"`
}

// sturdyStorage is sturdyc's distributed storage on Redis: its interface
// has no error results, so a failed Redis call is a miss (read) or nothing
// (write).
type sturdyStorage struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

func (s sturdyStorage) Get(ctx context.Context, key string) ([]byte, bool) {
	b, err := s.rdb.Get(ctx, s.prefix+key).Bytes()
	return b, err == nil
}

func (s sturdyStorage) Set(ctx context.Context, key string, value []byte) {
	s.rdb.Set(ctx, s.prefix+key, value, s.ttl)
}

func (s sturdyStorage) GetBatch(ctx context.Context, keys []string) map[string][]byte {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = s.prefix + k
	}
	vals, err := s.rdb.MGet(ctx, full...).Result()
	out := make(map[string][]byte, len(keys))
	if err != nil {
		return out
	}
	for i, v := range vals {
		if str, ok := v.(string); ok {
			out[keys[i]] = []byte(str)
		}
	}
	return out
}

func (s sturdyStorage) SetBatch(ctx context.Context, records map[string][]byte) {
	p := s.rdb.Pipeline()
	for k, v := range records {
		p.Set(ctx, s.prefix+k, v, s.ttl)
	}
	p.Exec(ctx)
}
