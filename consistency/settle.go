package consistency

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Settling a claimed entry. Each script acts on an entry only while the
// claims hash still holds the token of the claim that took it; otherwise the
// claim expired and another instance owns the entry now (or Update moved it),
// and the entry is left alone.
//
// KEYS of all three: due set, data hash, claims hash (+ dead list and dead
// counter for deadScript). ARGV[1] is the claim token.

// ackScript removes entries whose delete succeeded. ARGV[2..]: ids.
var ackScript = redis.NewScript(`
local n = 0
for i = 2, #ARGV do
	local id = ARGV[i]
	if redis.call('HGET', KEYS[3], id) == ARGV[1] then
		redis.call('ZREM', KEYS[1], id)
		redis.call('HDEL', KEYS[2], id)
		redis.call('HDEL', KEYS[3], id)
		n = n + 1
	end
end
return n
`)

// retryScript puts failed entries back, due later, with their attempt count
// raised. ARGV[2..]: triples of id, due (ms), payload.
var retryScript = redis.NewScript(`
local n = 0
for i = 2, #ARGV, 3 do
	local id = ARGV[i]
	if redis.call('HGET', KEYS[3], id) == ARGV[1] then
		redis.call('ZADD', KEYS[1], ARGV[i + 1], id)
		redis.call('HSET', KEYS[2], id, ARGV[i + 2])
		redis.call('HDEL', KEYS[3], id)
		n = n + 1
	end
end
return n
`)

// deadScript moves entries that ran out of attempts to the dead-letter list
// (capped at ARGV[2]) and counts them per target (ARGV[3]). ARGV[4..]: pairs
// of id and dead letter.
var deadScript = redis.NewScript(`
local n = 0
for i = 4, #ARGV, 2 do
	local id = ARGV[i]
	if redis.call('HGET', KEYS[3], id) == ARGV[1] then
		redis.call('ZREM', KEYS[1], id)
		redis.call('HDEL', KEYS[2], id)
		redis.call('HDEL', KEYS[3], id)
		redis.call('LPUSH', KEYS[4], ARGV[i + 1])
		n = n + 1
	end
end
if n > 0 then
	redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[2]) - 1)
	redis.call('HINCRBY', KEYS[5], ARGV[3], n)
end
return n
`)

// settle runs the deletes of one target's claimed entries, all keys in one
// call, and settles the entries by the outcome. It returns the earliest due
// time it gave an entry to retry (zero if none).
func (q *Queue) settle(ctx context.Context, t *Target, token string, batch []claimed) (retryAt time.Time) {
	type held struct {
		id string
		e  entry
	}
	var good []held
	var bad []any // corrupt entries: nothing to run, dropped so they do not come back
	var keys []string
	seen := make(map[string]struct{})
	for _, c := range batch {
		e, err := decodeEntry(c.raw)
		if err != nil {
			q.report(t.name, nil, err)
			bad = append(bad, c.id)
			continue
		}
		good = append(good, held{c.id, e})
		for _, k := range e.Keys {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				keys = append(keys, k)
			}
		}
	}
	var derr error
	if len(keys) > 0 {
		dctx, cancel := context.WithTimeout(ctx, q.cfg.opTimeout)
		derr = t.run(dctx, keys)
		cancel()
	}
	sk := []string{t.dueKey, q.keys.data, q.keys.claims}
	// Settle even when Close cancelled ctx meanwhile: the deletes ran.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.opTimeout)
	defer cancel()
	ack := append([]any{token}, bad...)
	if derr == nil {
		for _, h := range good {
			ack = append(ack, h.id)
		}
	}
	if len(ack) > 1 {
		n, err := ackScript.Run(sctx, q.rdb, sk, ack...).Int()
		if err != nil {
			// The entries run again after the visibility timeout, which is
			// harmless: a delete can be repeated.
			q.report(t.name, keys, q.redisError("ack", err))
		} else {
			q.stats.done.Add(uint64(n))
			q.stats.lostClaims.Add(uint64(len(ack) - 1 - n))
		}
	}
	if derr == nil {
		return retryAt
	}
	now := q.clock.Now()
	if ctx.Err() != nil {
		// Close interrupted the delete: put the entries back, due now and
		// with no attempt spent, for the next instance (or run) to take.
		release := []any{token}
		for _, h := range good {
			release = append(release, h.id, now.UnixMilli(), h.e.encode())
		}
		if err := retryScript.Run(sctx, q.rdb, sk, release...).Err(); err != nil {
			q.report(t.name, keys, q.redisError("release", err))
		}
		return retryAt
	}
	// Failed: every entry goes back with one more attempt, or to the dead
	// letters when it has none left.
	q.report(t.name, keys, fmt.Errorf("delete failed, will retry: %w", derr))
	retry := []any{token}
	dead := []any{token, q.cfg.deadLimit, t.name}
	var deadKeys []string
	for _, h := range good {
		e := h.e
		e.Attempts++
		e.Err = derr.Error()
		if e.Attempts >= q.cfg.maxAttempts {
			letter, _ := json.Marshal(DeadLetter{ID: h.id, Target: t.name, Keys: e.Keys,
				Attempts: e.Attempts, Err: e.Err, Time: now.UTC().Truncate(time.Millisecond)})
			dead = append(dead, h.id, string(letter))
			deadKeys = append(deadKeys, e.Keys...)
			continue
		}
		due := now.Add(q.backoff(e.Attempts))
		if retryAt.IsZero() || due.Before(retryAt) {
			retryAt = due
		}
		retry = append(retry, h.id, due.UnixMilli(), e.encode())
	}
	if len(retry) > 1 {
		n, err := retryScript.Run(sctx, q.rdb, sk, retry...).Int()
		if err != nil {
			q.report(t.name, keys, q.redisError("retry", err))
		} else {
			q.stats.retries.Add(uint64(n))
			q.stats.lostClaims.Add(uint64((len(retry)-1)/3 - n))
		}
	}
	if len(dead) > 3 {
		dk := []string{t.dueKey, q.keys.data, q.keys.claims, q.keys.dead, q.keys.deadCount}
		n, err := deadScript.Run(sctx, q.rdb, dk, dead...).Int()
		if err != nil {
			q.report(t.name, deadKeys, q.redisError("dead letter", err))
			return retryAt
		}
		q.stats.dead.Add(uint64(n))
		q.stats.lostClaims.Add(uint64((len(dead)-3)/2 - n))
		if n > 0 {
			// The line an operator looks for: these keys may stay stale
			// until their TTL runs out.
			q.log.Error("cacheguard consistency: delete dead-lettered after retry budget",
				"target", t.name, "keys", deadKeys, "attempts", q.cfg.maxAttempts, "err", derr)
			if q.cfg.onError != nil {
				q.cfg.onError(t.name, deadKeys, fmt.Errorf("dead-lettered: %w", derr))
			}
		}
	}
	return retryAt
}
