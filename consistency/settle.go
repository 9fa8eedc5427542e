package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
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

// retryScript puts failed entries back, due later by the server's clock,
// with their attempt count raised. ARGV[2]: pinned now (see nowLua); ARGV[3..]:
// triples of id, delay (ms), payload.
var retryScript = redis.NewScript(nowLua("2") + `
local n = 0
for i = 3, #ARGV, 3 do
	local id = ARGV[i]
	if redis.call('HGET', KEYS[3], id) == ARGV[1] then
		redis.call('ZADD', KEYS[1], now + tonumber(ARGV[i + 1]), id)
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

// settle runs the deletes of one target's claimed entries and settles each
// entry by its own outcome: acknowledged, put back to retry with one attempt
// more, or dead-lettered when its retry budget is spent. now is the server's
// time of the claim. It returns the earliest due time (server clock) it gave
// an entry to retry, zero if none.
func (q *Queue) settle(ctx context.Context, t *Target, shard int, token string, now time.Time, batch []claimed) (retryAt time.Time) {
	l := q.shards[shard]
	var good []held
	ack := []any{token}
	for _, c := range batch {
		e, err := decodeEntry(c.raw)
		if err != nil {
			// Nothing to run: dropped so that it does not come back.
			q.report(t.name, nil, err)
			ack = append(ack, c.id)
			continue
		}
		good = append(good, held{c.id, e})
	}
	errs := q.runEntries(ctx, t, good)
	sk := []string{l.Due(t.name), l.Data, l.Claims}
	// Settle even when Close cancelled ctx meanwhile: the deletes ran.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.timeout)
	defer cancel()
	closing := ctx.Err() != nil
	release := []any{token, q.nowArg()}
	retry := []any{token, q.nowArg()}
	dead := []any{token, q.cfg.deadLimit, t.name}
	var failedKeys, deadKeys []string
	var lastErr error
	for i, h := range good {
		err := errs[i]
		switch {
		case err == nil:
			ack = append(ack, h.id)
		case closing || errors.Is(err, errUnreached):
			// Close interrupted the delete, or the pass ran out of time
			// before it: put the entry back, due now and with no attempt
			// spent, for the next claim (here or elsewhere) to take.
			release = append(release, h.id, 0, h.e.encode())
		default:
			lastErr = err
			failedKeys = append(failedKeys, h.e.Keys...)
			e := h.e
			e.Attempts++
			e.Err = err.Error()
			if e.Attempts >= q.cfg.maxAttempts {
				letter, _ := json.Marshal(DeadLetter{ID: h.id, Target: t.name, Keys: e.Keys,
					Attempts: e.Attempts, Err: e.Err, Time: now.UTC().Truncate(time.Millisecond)})
				dead = append(dead, h.id, string(letter))
				deadKeys = append(deadKeys, e.Keys...)
				continue
			}
			wait := q.backoff(e.Attempts)
			if due := now.Add(wait); retryAt.IsZero() || due.Before(retryAt) {
				retryAt = due
			}
			retry = append(retry, h.id, wait.Milliseconds(), e.encode())
		}
	}
	if len(ack) > 1 {
		n, err := q.script(sctx, ackScript, sk, ack...).Int()
		if err != nil {
			// The entries run again after the visibility timeout, which is
			// harmless: a delete can be repeated.
			q.report(t.name, nil, q.redisError("ack", err))
		} else {
			q.stats.done.Add(uint64(n))
			q.stats.lostClaims.Add(uint64(len(ack) - 1 - n))
		}
	}
	if len(release) > 2 {
		if err := q.script(sctx, retryScript, sk, release...).Err(); err != nil {
			q.report(t.name, nil, q.redisError("release", err))
		}
	}
	if lastErr != nil {
		q.report(t.name, failedKeys, kind.Errorf("cacheguard: consistency: delete failed, will retry: %w", lastErr))
	}
	if len(retry) > 2 {
		n, err := q.script(sctx, retryScript, sk, retry...).Int()
		if err != nil {
			q.report(t.name, failedKeys, q.redisError("retry", err))
		} else {
			q.stats.retries.Add(uint64(n))
			q.stats.lostClaims.Add(uint64((len(retry)-2)/3 - n))
		}
	}
	if len(dead) > 3 {
		dk := []string{l.Due(t.name), l.Data, l.Claims, l.Dead, l.DeadCount}
		n, err := q.script(sctx, deadScript, dk, dead...).Int()
		if err != nil {
			q.report(t.name, deadKeys, q.redisError("dead letter", err))
			return retryAt
		}
		q.stats.dead.Add(uint64(n))
		q.stats.lostClaims.Add(uint64((len(dead)-3)/2 - n))
		if n > 0 {
			// The line an operator looks for: these keys may stay stale
			// until their TTL runs out.
			q.log.Error("cacheguard: consistency: delete dead-lettered after retry budget",
				"target", t.name, "keys", deadKeys, "attempts", q.cfg.maxAttempts, "err", lastErr)
			if q.cfg.onError != nil {
				q.cfg.onError(&TargetError{Target: t.name, Keys: deadKeys, Err: kind.Errorf("cacheguard: consistency: dead-lettered: %w", lastErr)})
			}
		}
	}
	return retryAt
}
