package consistency

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// putScript writes entry ARGV[1] with payload ARGV[3], due at ARGV[2]. It
// also drops any claim on the entry, so that a worker that claimed an
// earlier version of it (Update moving its provisional due time) cannot
// acknowledge it away: its ack is refused and the entry stays, due anew.
//
// KEYS: due set, data hash, claims hash.
var putScript = redis.NewScript(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
`)

// record writes (or moves) entry id of target t, due at due. It is the one
// write that makes a delete durable: from then on some instance runs it.
func (q *Queue) record(ctx context.Context, t *Target, id string, e entry, due time.Time) error {
	err := putScript.Run(ctx, q.rdb, []string{t.dueKey, q.keys.data, q.keys.claims},
		id, due.UnixMilli(), e.encode()).Err()
	if err != nil {
		return q.redisError("record delete", err)
	}
	q.kick(due)
	return nil
}

// kick wakes the worker if due comes before its next look.
func (q *Queue) kick(due time.Time) {
	q.wakeMu.Lock()
	early := due.Before(q.wakeAt)
	if early {
		q.wakeAt = due
	}
	q.wakeMu.Unlock()
	if early {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}
