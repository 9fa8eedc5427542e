package consistency

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Claiming. A worker takes up to a batch of due entries in one script: each
// is hidden from the others by moving its score to a visibility deadline,
// and the claim's token is written next to it. The worker then runs the
// deletes and settles each entry (ack, retry or dead letter, settle.go) only
// if its token is still the one there. If the worker dies, the entries come
// due again at the deadline and another instance claims them, replacing the
// token, so a worker that was merely slow cannot settle them twice.
//
// The script also returns the earliest score left, so the worker knows when
// to look next.
//
// KEYS: the due sets of the targets, then the data and claims hashes.
// ARGV: now (ms), visibility deadline (ms), batch size, claim token.
// Reply: {earliest score or -1, then per entry: due-set index, id, payload}.
var claimScript = redis.NewScript(`
local n = tonumber(ARGV[3])
local nz = #KEYS - 2
local data, claims = KEYS[nz + 1], KEYS[nz + 2]
local out = {-1}
for i = 1, nz do
	if n <= 0 then break end
	local ids = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', ARGV[1], 'LIMIT', 0, n)
	for _, id in ipairs(ids) do
		local p = redis.call('HGET', data, id)
		if p then
			redis.call('ZADD', KEYS[i], ARGV[2], id)
			redis.call('HSET', claims, id, ARGV[4])
			out[#out + 1] = i
			out[#out + 1] = id
			out[#out + 1] = p
			n = n - 1
		else
			redis.call('ZREM', KEYS[i], id)
		end
	end
end
local nxt = -1
for i = 1, nz do
	local f = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
	if f[2] then
		local s = tonumber(f[2])
		if nxt < 0 or s < nxt then nxt = s end
	end
end
out[1] = nxt
return out
`)

// claimed is one entry held by a claim.
type claimed struct {
	target *Target
	id     string
	raw    string
}

// claim takes the due entries of targets (up to a batch) under token. next
// is the earliest score left in their sets (zero when they are empty).
func (q *Queue) claim(ctx context.Context, targets []*Target, token string) (got []claimed, next time.Time, err error) {
	keys := make([]string, 0, len(targets)+2)
	for _, t := range targets {
		keys = append(keys, t.dueKey)
	}
	keys = append(keys, q.keys.data, q.keys.claims)
	now := q.clock.Now()
	res, err := claimScript.Run(ctx, q.rdb, keys,
		now.UnixMilli(), now.Add(q.cfg.visibility).UnixMilli(), q.cfg.batch, token).Slice()
	if err != nil {
		return nil, next, q.redisError("claim", err)
	}
	if len(res) == 0 || (len(res)-1)%3 != 0 {
		return nil, next, q.redisError("claim", fmt.Errorf("malformed reply of %d items", len(res)))
	}
	if ms, ok := res[0].(int64); ok && ms >= 0 {
		next = time.UnixMilli(ms)
	}
	for i := 1; i+2 < len(res); i += 3 {
		idx, _ := res[i].(int64)
		id, _ := res[i+1].(string)
		raw, _ := res[i+2].(string)
		if idx < 1 || int(idx) > len(targets) || id == "" {
			return got, next, q.redisError("claim", fmt.Errorf("malformed entry in reply"))
		}
		got = append(got, claimed{target: targets[idx-1], id: id, raw: raw})
	}
	return got, next, nil
}
