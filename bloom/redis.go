package bloom

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/option"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Redis is a Bloom filter kept in Redis and shared by every instance that
// opens it under the same name with the same size: a key added through one
// instance is found through all of them at once. A test, or an add of up to
// one batch of keys, is one round trip running one script. Safe for
// concurrent use; it holds no goroutines and needs no Close.
//
// The whole filter lives in one Redis Cluster slot, so on a cluster it is
// served by a single node; a very hot filter is better served by a Local one.
type Redis struct {
	rdb   redis.UniversalClient
	name  string
	n     uint
	p     Params
	cfg   config
	ready atomic.Bool

	k redisKeys
	// head is the script arguments every call starts with: the parameters
	// compared with {N}:cfg ("m=… k=… v=…"), then m and k.
	head [3]any
}

// redisKeys are the filter's keys (see the package comment), all under the
// hash tag {N}: wire.BloomKeys.
type redisKeys = wire.BloomKeys

// NewRedis opens the Redis filter called name, sized for n keys at
// false-positive rate fp, creating it (empty and not ready) if it does not
// exist. If it exists with another size it returns an error wrapping
// ErrMismatch: every instance of one filter must be configured alike. name
// must not contain braces; it becomes the hash tag of the filter's keys.
func NewRedis(ctx context.Context, rdb redis.UniversalClient, name string, n uint, fp float64, opts ...Option) (*Redis, error) {
	r, err := newRedis(rdb, name, n, fp, partRedis, opts)
	if err != nil {
		return nil, err
	}
	// An add of no keys creates the filter or checks its parameters.
	if err := r.Add(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// newRedis is NewRedis without its first call to Redis.
func newRedis(rdb redis.UniversalClient, name string, n uint, fp float64, built option.Part, opts []Option) (*Redis, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidArgument)
	}
	if name == "" || strings.ContainsAny(name, "{}") {
		return nil, fmt.Errorf("%w: filter name %q must be non-empty and free of braces", ErrInvalidArgument, name)
	}
	p, err := Estimate(n, fp)
	if err != nil {
		return nil, err
	}
	cfg, err := newConfig(built, opts)
	if err != nil {
		return nil, err
	}
	r := &Redis{
		rdb: rdb, name: name, n: n, p: p, cfg: cfg,
		k:    wire.BloomFilterKeys(name),
		head: [3]any{wire.BloomConfig(uint64(p.M), uint64(p.K), schemeVersion), p.M, p.K},
	}
	return r, nil
}

// Params returns the filter's size and number of hash functions.
func (r *Redis) Params() Params { return r.p }

// Name returns the filter's name.
func (r *Redis) Name() string { return r.name }

// Ready reports whether the shared filter was complete when this instance
// last heard from Redis (every MayContain and Add tells). It can lag behind a
// rebuild finished elsewhere until the next call. MayContain itself is never
// stale, because the script that reads the bits checks readiness too: call it
// whatever Ready says.
func (r *Redis) Ready() bool { return r.ready.Load() }

// Drop deletes the filter from Redis, for every instance. Instances that keep
// using it recreate it empty and not ready on their next Add.
func (r *Redis) Drop(ctx context.Context) error {
	k := r.k
	if err := r.rdb.Del(ctx, k.Cfg, k.Bits, k.Next, k.Delta, k.Build).Err(); err != nil {
		return r.wrap(err)
	}
	r.ready.Store(false)
	return nil
}

// args returns the argument list params, m, k, extra...
func (r *Redis) args(extra ...any) []any {
	return append(append(make([]any, 0, len(r.head)+len(extra)), r.head[:]...), extra...)
}

// checkLua reads {N}:cfg (KEYS[1]) and refuses a filter whose parameters
// differ from ARGV[1] ("m=… k=… v=…"); it sets ready from the stored flag. A
// missing cfg passes with ready false. cfg is one string, "m=… k=… v=…
// ready=0|1", because one GET is the cheapest read a script can make and
// this one runs on every test.
const checkLua = wire.BloomLua + `
local cfg = redis.call('GET', KEYS[1])
local ready = false
if cfg then
  if string.sub(cfg, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then
    return redis.error_reply('BLOOMMISMATCH ' .. string.gsub(cfg, READY_PATTERN, ''))
  end
  ready = string.sub(cfg, -1) == '1'
end
`

// createLua (after checkLua) creates a missing filter, not ready. A bitmap
// (KEYS[2]) that vanished (eviction, FLUSHALL, a restart without
// persistence) is recreated empty and the filter marked not ready: an empty
// bitmap must not be trusted to say "absent". The bitmap is allocated whole
// up front (m is ARGV[2]), so its memory shows at once and SETBIT never grows
// it piecemeal.
const createLua = `
if not cfg then redis.call('SET', KEYS[1], ARGV[1] .. NOT_READY) end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SETBIT', KEYS[2], tonumber(ARGV[2]) - 1, 0)
  if ready then redis.call('SET', KEYS[1], ARGV[1] .. NOT_READY); ready = false end
end
`

// offsetLua decodes the big-endian uint32 offset at byte p of s (see
// Params.pack). Lua numbers are doubles: every offset below 2^32 is exact.
const offsetLua = `
local function offset(s, p)
  local a, b, c, d = string.byte(s, p, p + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
`

// wrap turns the scripts' error replies into the package's errors.
func (r *Redis) wrap(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// Redis puts "ERR " in front of a script error whose first word it
		// does not take for an error code.
		msg := strings.TrimPrefix(rerr.Error(), "ERR ")
		switch {
		case strings.HasPrefix(msg, "BLOOMMISMATCH "):
			return fmt.Errorf("%w: Redis filter %q has %s, this instance wants %s (same name, other size: use another name or Drop the old filter)",
				ErrMismatch, r.name, strings.TrimPrefix(msg, "BLOOMMISMATCH "), r.head[0])
		case strings.HasPrefix(msg, "BLOOMBUSY"):
			return fmt.Errorf("%w: Redis filter %q", ErrRebuildInProgress, r.name)
		case strings.HasPrefix(msg, "BLOOMLOST"):
			return fmt.Errorf("%w: Redis filter %q", ErrRebuildLost, r.name)
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // the caller's context ended: not a Redis failure
	}
	return kind.Wrap(ErrRedis, fmt.Sprintf("filter %q", r.name), err)
}
