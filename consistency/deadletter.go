package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// DeadLetters returns up to n dead letters, newest first. Letters that do not
// decode are skipped and reported.
func (q *Queue) DeadLetters(ctx context.Context, n int) ([]DeadLetter, error) {
	if n <= 0 {
		return nil, nil
	}
	raw, err := q.rdb.LRange(ctx, q.keys.dead, 0, int64(n-1)).Result()
	if err != nil {
		return nil, q.redisError("dead letters", err)
	}
	out := make([]DeadLetter, 0, len(raw))
	for _, r := range raw {
		var d DeadLetter
		if err := json.Unmarshal([]byte(r), &d); err != nil {
			q.report("", nil, fmt.Errorf("cacheguard: corrupt dead letter: %w", err))
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// DeadLetterCount returns how many deletes of target have been dead-lettered
// since the queue's keys were created (by all instances; not capped like the
// list).
func (q *Queue) DeadLetterCount(ctx context.Context, target string) (int64, error) {
	s, err := q.rdb.HGet(ctx, q.keys.deadCount, target).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, q.redisError("dead letter count", err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cacheguard: dead letter count %q: %w", s, err)
	}
	return n, nil
}
