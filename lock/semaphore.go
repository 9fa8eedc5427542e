package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Semaphore hands out up to size permits of one name. Each acquisition
// holds its permits under a lease of their own, renewed by the client's
// watchdog like any lock, so the permits of a holder that crashed come back
// within one lease, while the others keep theirs. Waiters are woken by the
// same release notifications as locks. Permits are not reentrant and carry
// no fencing token.
type Semaphore struct {
	e       *engine
	cfg     config
	rdb     redis.UniversalClient
	name    string
	size    int64
	key     string
	channel string
	pub     publisher
}

// Semaphore returns the semaphore called name with size permits. Every user
// of one name must give the same size. An invalid name, size or option is
// reported by Acquire and TryAcquire.
func (c *Client) Semaphore(name string, size int, opts ...Option) *Semaphore {
	s := &Semaphore{e: c.engine, cfg: c.cfg, rdb: c.rdb, name: name, size: int64(size), pub: c.pub}
	s.cfg.apply(partSemaphore, opts)
	base, err := baseKey(s.cfg.prefix, name)
	s.cfg.errs.Add(err)
	if size <= 0 {
		s.cfg.errs.Add(fmt.Errorf("%w: semaphore %q: size %d is not positive", ErrInvalidArgument, name, size))
	}
	s.key = base + wire.LockSemaphoreSuffix
	s.channel = s.key + wire.LockReleasedSuffix
	return s
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Acquire takes n permits, waiting for them as long as ctx allows. The
// handle's Unlock gives them back; its Context ends if their lease is lost.
func (s *Semaphore) Acquire(ctx context.Context, n int) (*Handle, error) {
	return s.obtain(ctx, n, true)
}

// TryAcquire takes n permits if they are free, or returns ErrNotObtained.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) (*Handle, error) {
	return s.obtain(ctx, n, false)
}

func (s *Semaphore) obtain(ctx context.Context, n int, wait bool) (*Handle, error) {
	if s.cfg.errs.Err() == nil && (n <= 0 || int64(n) > s.size) {
		return nil, fmt.Errorf("cacheguard: lock: semaphore %q: cannot take %d of %d permits", s.name, n, s.size)
	}
	b := &permitBackend{s: s, n: int64(n),
		args: newScriptArgs(s.cfg.lease, s.pub.cmd, s.channel, s.pub.payload)}
	// Permits are never reentrant: every acquisition (every attempt) is
	// its own owner, whatever owner id ctx carries.
	return s.e.obtain(context.WithValue(ctx, ownerKey{}, ""), b, &s.cfg, wait)
}

// permitBackend is one acquisition of n permits.
type permitBackend struct {
	s    *Semaphore
	n    int64
	args scriptArgs
}

func (b *permitBackend) name() string     { return b.s.name }
func (b *permitBackend) id() string       { return b.s.key }
func (b *permitBackend) channel() string  { return b.s.channel }
func (b *permitBackend) shared() bool     { return true } // a release may let several waiters in
func (b *permitBackend) waitList() string { return "" }

func (b *permitBackend) acquire(ctx context.Context, owner string, lease time.Duration, _ bool) (acquired, error) {
	start := time.Now()
	cfg := &b.s.cfg
	v, err := call.Do(cfg.calls, ctx, cfg.callTimeout(lease), func(ctx context.Context) ([]int64, error) {
		return permitAcquireScript.Run(ctx, b.s.rdb, []string{b.s.key}, owner, b.n, b.s.size, ms(lease)).Int64Slice()
	}, func(v []int64, err error) {
		if err == nil && len(v) > 0 && v[0] > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.releaseTimeout())
			defer cancel()
			b.release(ctx, owner, 0, true)
		}
	})
	if err != nil {
		return acquired{}, kind.Errorf("cacheguard: lock: acquire semaphore %q: %w", b.s.name, err)
	}
	if len(v) != 2 {
		return acquired{}, fmt.Errorf("cacheguard: lock: unexpected semaphore reply %v", v)
	}
	if v[0] == 0 {
		return acquired{wait: time.Duration(v[1]) * time.Millisecond, start: start}, nil
	}
	return acquired{holds: 1, start: start, validUntil: cfg.validUntil(start, v[1])}, nil
}

func (b *permitBackend) renew(ctx context.Context, owner string, lease time.Duration) (time.Time, error) {
	start := time.Now()
	cfg := &b.s.cfg
	n, err := call.Do(cfg.calls, ctx, cfg.callTimeout(lease), func(ctx context.Context) (int64, error) {
		return permitRenewScript.Run(ctx, b.s.rdb, []string{b.s.key}, owner, b.n, ms(lease)).Int64()
	}, nil)
	if err != nil {
		return time.Time{}, kind.Errorf("cacheguard: lock: renew semaphore %q: %w", b.s.name, err)
	}
	if n <= 0 {
		return time.Time{}, lostf("%q: the permits' lease ran out", b.s.name)
	}
	return cfg.validUntil(start, n), nil
}

func (b *permitBackend) release(ctx context.Context, owner string, _ int64, _ bool) error {
	cfg := &b.s.cfg
	n, err := call.Do(cfg.calls, ctx, cfg.releaseTimeout(), func(ctx context.Context) (int64, error) {
		return permitReleaseScript.Run(ctx, b.s.rdb, []string{b.s.key}, owner, b.n,
			b.args.pubCmd, b.args.channel, b.args.payload).Int64()
	}, nil)
	if err != nil {
		return kind.Errorf("cacheguard: lock: release semaphore %q: %w", b.s.name, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %q (permits)", ErrNotHeld, b.s.name)
	}
	return nil
}

func (b *permitBackend) ttl(ctx context.Context, owner string) (time.Duration, error) {
	cfg := &b.s.cfg
	n, err := call.Do(cfg.calls, ctx, cfg.callTimeout(cfg.lease), func(ctx context.Context) (int64, error) {
		return permitTTLScript.Run(ctx, b.s.rdb, []string{b.s.key}, owner).Int64()
	}, nil)
	if err != nil {
		return 0, kind.Errorf("cacheguard: lock: ttl of semaphore %q: %w", b.s.name, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: %q (permits)", ErrNotHeld, b.s.name)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// The permit scripts. KEYS[1] is a zset of permits ("owner:i") scored by the
// expiry of their lease (server ms); expired permits are dropped first, so a
// crashed holder's permits come back on their own.
const permitPrelude = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local function keep()
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if #last > 0 then redis.call('PEXPIRE', KEYS[1], tonumber(last[2]) - now) end
end
`

// permitAcquireScript takes ARGV[2] permits for ARGV[1] of ARGV[3] with
// lease ARGV[4] ms. Replies {n, lease} or {0, ms until the next permit
// expires (the lease when none will)}.
var permitAcquireScript = redis.NewScript(permitPrelude + `
local n, size, lease = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('ZCARD', KEYS[1]) + n > size then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if #first > 0 then return {0, tonumber(first[2]) - now} end
  return {0, lease}
end
for i = 1, n do redis.call('ZADD', KEYS[1], now + lease, ARGV[1] .. ':' .. i) end
keep()
return {n, lease}
`)

// permitRenewScript makes ARGV[1]'s ARGV[2] permits last at least ARGV[3]
// ms (never shorter). Replies the shortest lease left, or 0 when one of them
// is gone.
var permitRenewScript = redis.NewScript(permitPrelude + `
local n, lease = tonumber(ARGV[2]), tonumber(ARGV[3])
local least = nil
for i = 1, n do
  local id = ARGV[1] .. ':' .. i
  local s = redis.call('ZSCORE', KEYS[1], id)
  if not s then return 0 end
  s = tonumber(s)
  if s < now + lease then
    s = now + lease
    redis.call('ZADD', KEYS[1], s, id)
  end
  if not least or s < least then least = s end
end
keep()
return math.max(least - now, 1)
`)

// permitReleaseScript gives back ARGV[1]'s ARGV[2] permits and announces it
// (ARGV[3..5] as releaseScript's ARGV[3..5]). Replies how many it held.
var permitReleaseScript = redis.NewScript(permitPrelude + `
local k = 0
for i = 1, tonumber(ARGV[2]) do
  k = k + redis.call('ZREM', KEYS[1], ARGV[1] .. ':' .. i)
end
keep()
if k > 0 and ARGV[3] ~= '' then redis.pcall(ARGV[3], ARGV[4], ARGV[5] .. '|') end
return k
`)

// permitTTLScript replies the lease left of ARGV[1]'s first permit, or -1.
var permitTTLScript = redis.NewScript(permitPrelude + `
local s = redis.call('ZSCORE', KEYS[1], ARGV[1] .. ':1')
if not s then return -1 end
return tonumber(s) - now
`)
