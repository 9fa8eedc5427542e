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
// ARGV: pinned now (see nowLua), visibility timeout (ms), batch size, claim token.
// Reply: {server now (ms), earliest score or -1, then per entry: due-set
// index, id, payload}.
var claimScript = redis.NewScript(nowLua("1") + `
local n = tonumber(ARGV[3])
local deadline = now + tonumber(ARGV[2])
local nz = #KEYS - 2
local data, claims = KEYS[nz + 1], KEYS[nz + 2]
local out = {now, -1}
for i = 1, nz do
	if n <= 0 then break end
	local ids = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', now, 'LIMIT', 0, n)
	for _, id in ipairs(ids) do
		local p = redis.call('HGET', data, id)
		if p then
			redis.call('ZADD', KEYS[i], deadline, id)
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
out[2] = nxt
return out
`)

// claimed is one entry held by a claim.
type claimed struct {
	shard  int
	target *Target
	id     string
	raw    string
}

// claim takes the due entries of targets in one shard (up to a batch) under
// token. now
// is the server's time of the claim; next is the earliest score left in
// their sets (zero when they are empty), also by the server's clock.
func (q *Queue) claim(ctx context.Context, shard int, targets []*Target, token string) (got []claimed, now, next time.Time, err error) {
	l := q.shards[shard]
	keys := make([]string, 0, len(targets)+2)
	for _, t := range targets {
		keys = append(keys, l.Due(t.name))
	}
	keys = append(keys, l.Data, l.Claims)
	res, err := q.script(ctx, claimScript, keys,
		q.nowArg(), q.cfg.visibility.Milliseconds(), q.cfg.batch, token).Slice()
	if err != nil {
		return nil, now, next, q.redisError("claim", err)
	}
	if len(res) < 2 || (len(res)-2)%3 != 0 {
		return nil, now, next, q.redisError("claim", fmt.Errorf("malformed reply of %d items", len(res)))
	}
	ms, _ := res[0].(int64)
	now = time.UnixMilli(ms)
	if ms, ok := res[1].(int64); ok && ms >= 0 {
		next = time.UnixMilli(ms)
	}
	for i := 2; i+2 < len(res); i += 3 {
		idx, _ := res[i].(int64)
		id, _ := res[i+1].(string)
		raw, _ := res[i+2].(string)
		if idx < 1 || int(idx) > len(targets) || id == "" {
			return got, now, next, q.redisError("claim", fmt.Errorf("malformed entry in reply"))
		}
		got = append(got, claimed{shard: shard, target: targets[idx-1], id: id, raw: raw})
	}
	return got, now, next, nil
}
