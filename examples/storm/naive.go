package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/redis/go-redis/v9"
)

// naive is cache-aside as it is usually written by hand: GET; on a miss
// query the database and SET the row with a fixed TTL. A missing row is not
// cached, concurrent misses of one key each query the database, and when
// Redis fails every read goes to the database.
type naive struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
	load   cache.Loader[Item]
}

// Get reads key; a missing row is an answer, not an error.
func (n *naive) Get(ctx context.Context, key string) error {
	raw, err := n.rdb.Get(ctx, n.prefix+key).Bytes()
	if err == nil {
		var it Item
		if json.Unmarshal(raw, &it) == nil {
			return nil
		}
	}
	if err != nil && !errors.Is(err, redis.Nil) && ctx.Err() != nil {
		return err // out of time; any other Redis error falls through to the database
	}
	it, err := n.load(ctx, key)
	if errors.Is(err, cache.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	raw, err = json.Marshal(it)
	if err != nil {
		return err
	}
	// The row is served even if it cannot be cached: a failed SET only
	// means that the next reader queries the database again.
	n.rdb.Set(ctx, n.prefix+key, raw, n.ttl)
	return nil
}

func (n *naive) Close() error { return nil }

// fill writes items with the fixed TTL, all at once (a warm-up or a batch
// job), pipelined.
func (n *naive) fill(ctx context.Context, items []Item) error {
	const batch = 500
	for len(items) > 0 {
		part := items[:min(batch, len(items))]
		items = items[len(part):]
		_, err := n.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, it := range part {
				raw, err := json.Marshal(it)
				if err != nil {
					return err
				}
				p.Set(ctx, n.prefix+itemKey(it.ID), raw, n.ttl)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
