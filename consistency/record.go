package consistency

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/redis/go-redis/v9"
)

// putScript writes entry ARGV[3] with payload ARGV[4], due ARGV[2] ms after
// the server's now (ARGV[1]: see nowLua). It also drops any claim on the entry, so that a worker
// that claimed an earlier version of it (Update moving its provisional due
// time) cannot acknowledge it away: its ack is refused and the entry stays,
// due anew.
//
// KEYS: due set, data hash, claims hash.
var putScript = redis.NewScript(nowLua("1") + `
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('HDEL', KEYS[3], ARGV[3])
return 1
`)

// record writes (or moves) entry id of target t, due delay from the Redis
// server's now, bounded by ctx. It is the one write that makes a delete
// durable: from then on some instance runs it.
func (q *Queue) record(ctx context.Context, t *Target, id string, e entry, delay time.Duration) error {
	return call.Err(q.calls, ctx, 0, func(ctx context.Context) error {
		return q.put(ctx, t, id, e, delay)
	})
}

// recordDetached is record for a caller that may give up, or has given up,
// while the delete must still be recorded: it runs detached from ctx,
// bounded by the timeout (WithTimeout), and the caller waits for it while ctx allows.
// Past that it goes on in the background: the error then matches
// call.ErrAbandoned and ctx's error, and a failure that comes later goes to
// late.
func (q *Queue) recordDetached(ctx context.Context, t *Target, id string, e entry, delay time.Duration, late func(error)) error {
	_, err := call.Do(q.calls, call.Detached(ctx, ctx.Err() != nil), q.cfg.timeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, q.put(ctx, t, id, e, delay)
	}, func(_ struct{}, err error) {
		if err != nil {
			late(err)
		}
	})
	return err
}

// put is record's write, unbounded.
func (q *Queue) put(ctx context.Context, t *Target, id string, e entry, delay time.Duration) error {
	l := q.shards[shardOf(id, len(q.shards))]
	err := putScript.Run(ctx, q.rdb, []string{l.Due(t.name), l.Data, l.Claims},
		q.nowArg(), delay.Milliseconds(), id, e.encode()).Err()
	if err != nil {
		return q.redisError("record delete", err)
	}
	q.kick(q.clock.Now().Add(delay))
	return nil
}

// kick wakes the worker if due (by the local clock, like the worker's own
// wake time) comes before its next look.
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
