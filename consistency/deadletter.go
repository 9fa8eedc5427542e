package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/redis/go-redis/v9"
)

// DeadLetters returns up to n dead letters, newest first (across shards).
// Letters that do not decode are skipped and reported.
func (q *Queue) DeadLetters(ctx context.Context, n int) ([]DeadLetter, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []DeadLetter
	for _, l := range q.shards {
		raw, err := call.Do(q.calls, ctx, 0, func(ctx context.Context) ([]string, error) {
			return q.rdb.LRange(ctx, l.Dead, 0, int64(n-1)).Result()
		}, nil)
		if err != nil {
			return nil, q.redisError("dead letters", err)
		}
		for _, r := range raw {
			var d DeadLetter
			if err := json.Unmarshal([]byte(r), &d); err != nil {
				q.report("", nil, kind.Errorf("cacheguard: consistency: corrupt dead letter: %w", err))
				continue
			}
			out = append(out, d)
		}
	}
	if len(q.shards) > 1 {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	}
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// DeadLetterCount returns how many deletes of target have been dead-lettered
// since the queue's keys were created (by all instances, in all shards; not
// capped like the list).
func (q *Queue) DeadLetterCount(ctx context.Context, target string) (int64, error) {
	var total int64
	for _, l := range q.shards {
		s, err := call.Do(q.calls, ctx, 0, func(ctx context.Context) (string, error) {
			return q.rdb.HGet(ctx, l.DeadCount, target).Result()
		}, nil)
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return 0, q.redisError("dead letter count", err)
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, kind.Errorf("cacheguard: consistency: dead letter count %q: %w", s, err)
		}
		total += n
	}
	return total, nil
}
