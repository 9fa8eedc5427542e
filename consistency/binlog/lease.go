package binlog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// One tailer per fleet. Instances that run a Source with one Redis position
// key (RedisPositions) elect one tailer through that key: the tailer's
// token and the lease's expiry (by the Redis server's clock) live in the
// key's own value beside the position, so taking the lease, renewing it,
// saving a position under it and giving it back are each one script on one
// key (any Redis Cluster slot). The others stand by and take the lease over
// once it has run out; a save is refused to an instance that no longer holds
// it (ErrNotTailer), so a tailer that froze and woke after another took
// over stops without moving the position.

// ErrNotTailer is matched by the error of a save refused because another
// instance holds the tailer's lease now.
var ErrNotTailer = errors.New("cacheguard: binlog: the tailer's lease is held by another instance")

// elector is a PositionStore that can elect one tailer among the Sources
// sharing it (RedisPositions does).
type elector interface {
	PositionStore
	// acquire takes the lease for token for ttlMS, or renews it if token
	// holds it; held is false (with the holder) while another token holds
	// an unexpired lease.
	acquire(ctx context.Context, token string, ttlMS int64) (held bool, holder string, err error)
	// saveHeld saves p while token holds the lease (ErrNotTailer if not).
	saveHeld(ctx context.Context, token string, p Position) error
	// release gives the lease back if token holds it.
	release(ctx context.Context, token string) error
}

// leaseLua reads the value at KEYS[1] (JSON: file, offset, tailer, until)
// into d, with now the server's clock in ms.
var leaseLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local raw = redis.call('GET', KEYS[1])
local T, U, F, O = '` + wire.BinlogTailer + `', '` + wire.BinlogUntil + `', '` + wire.BinlogFile + `', '` + wire.BinlogOffset + `'
local d = {}
if raw then
  local ok, v = pcall(cjson.decode, raw)
  if not ok or type(v) ~= 'table' then
    return redis.error_reply('corrupt position under ' .. KEYS[1])
  end
  d = v
end
local function held_by_other(token)
  return d[T] and d[T] ~= token and tonumber(d[U] or 0) > now
end
`

// acquireScript takes or renews the lease for ARGV[1] for ARGV[2] ms:
// {1} when held, {0, holder} while another holds it.
var acquireScript = redis.NewScript(leaseLua + `
if held_by_other(ARGV[1]) then
  return {0, d[T]}
end
d[T] = ARGV[1]
d[U] = now + tonumber(ARGV[2])
redis.call('SET', KEYS[1], cjson.encode(d))
return {1, ARGV[1]}
`)

// saveScript sets the position to file ARGV[2], offset ARGV[3] while
// ARGV[1] holds the lease (even one past its expiry that nobody took
// over): 1, else 0.
var saveScript = redis.NewScript(leaseLua + `
if d[T] ~= ARGV[1] then
  return 0
end
d[F] = ARGV[2]
d[O] = tonumber(ARGV[3])
redis.call('SET', KEYS[1], cjson.encode(d))
return 1
`)

// releaseScript ends the lease of ARGV[1], keeping the position.
var releaseScript = redis.NewScript(leaseLua + `
if d[T] == ARGV[1] then
  d[T] = nil
  d[U] = nil
  redis.call('SET', KEYS[1], cjson.encode(d))
  return 1
end
return 0
`)

func (r redisPositions) acquire(ctx context.Context, token string, ttlMS int64) (bool, string, error) {
	v, err := acquireScript.Run(ctx, r.rdb, []string{r.key}, token, ttlMS).Slice()
	if err != nil && strings.Contains(err.Error(), "corrupt position") {
		return false, "", kind.Errorf("%w under %s: %w", ErrCorruptPosition, r.key, err)
	}
	if err != nil {
		return false, "", kind.RedisErr(ctx, ErrRedis, "tailer lease under "+r.key, err)
	}
	if len(v) != 2 {
		return false, "", fmt.Errorf("cacheguard: binlog: tailer lease under %s: unexpected reply %v", r.key, v)
	}
	held, _ := v[0].(int64)
	holder, _ := v[1].(string)
	return held == 1, holder, nil
}

func (r redisPositions) saveHeld(ctx context.Context, token string, p Position) error {
	ok, err := saveScript.Run(ctx, r.rdb, []string{r.key}, token, p.File, p.Offset).Int()
	if err != nil {
		return kind.RedisErr(ctx, ErrRedis, fmt.Sprintf("save position %v", p), err)
	}
	if ok != 1 {
		return fmt.Errorf("%w: save position %v under %s", ErrNotTailer, p, r.key)
	}
	return nil
}

func (r redisPositions) release(ctx context.Context, token string) error {
	if err := releaseScript.Run(ctx, r.rdb, []string{r.key}, token).Err(); err != nil {
		return kind.RedisErr(ctx, ErrRedis, "give the tailer lease under "+r.key+" back", err)
	}
	return nil
}
