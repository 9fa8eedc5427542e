package cache

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pipe"
	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The lease protocol. A caller that misses writes a placeholder with
//
//	SET key placeholder NX GET PX lease
//
// and reads the reply:
//
//   - nil: the key was empty and the lease is ours; load, then fill with
//     fillScript, which replaces the value only if it still holds OUR
//     placeholder.
//   - an envelope: someone filled the key meanwhile; use it.
//   - another placeholder: someone else is loading; mark it as waited for
//     and wait to be woken by the fill's notification (notify.go), retrying
//     now and then as well (the retry takes over a lease whose holder died
//     once it expires).
//   - foreign bytes: take the key over with swapScript and load.
//
// Delete removes whatever the key holds, placeholder included, so a fill that
// loaded before the Delete finds its placeholder gone and is refused: no stale
// value is written back, whatever the timing (the lease idea of Facebook's
// memcache, NSDI 2013). Every script touches one key, so all of them are
// Redis Cluster safe without hash tags.

// swapScript sets KEYS[1] to ARGV[2] with a PX of ARGV[3] only if it holds
// exactly ARGV[1]: it takes over a key holding foreign bytes or a version
// tombstone (ARGV[1] is those bytes, ARGV[2] our placeholder).
//
// A key's version is a high-water mark that fills keep (versionkeep.go): a
// placeholder taking over a version tombstone carries the tombstone's version
// after its token, and the fill of such a placeholder writes that version
// into the envelope (fillScript), so a fill never leaves a key below a
// version it held.
var swapScript = redis.NewScript(wire.Lua + `
local cur = redis.call('GET', KEYS[1])
if not cur or cur ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], with_kept_version(ARGV[2], cur), 'PX', ARGV[3])
return 1
`)

// extendScript renews the lease if KEYS[1] still holds our placeholder
// ARGV[1] (in any of its shapes: owns).
var extendScript = redis.NewScript(wire.Lua + `
local mine = owns(redis.call('GET', KEYS[1]), ARGV[1])
if mine then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// releaseScript deletes KEYS[1] if it still holds our placeholder, so that a
// failed load does not make the next caller wait out the lease. A placeholder
// that kept a version gives it back as a version tombstone. Waiters that
// marked it are woken (ARGV[2] ARGV[3]: see fillScript).
var releaseScript = redis.NewScript(wire.Lua + `
local cur = redis.call('GET', KEYS[1])
local mine, marked = owns(cur, ARGV[1])
if not mine then
	return 0
end
local kept = false
local ver = placeholder_version(cur)
if ver then
	local pttl = redis.call('PTTL', KEYS[1])
	if pttl > 0 then
		redis.call('SET', KEYS[1], tombstone(ver), 'PX', pttl)
		kept = true
	end
end
if not kept then
	redis.call('DEL', KEYS[1])
end
if marked and ARGV[2] and ARGV[2] ~= '' then
	redis.pcall(ARGV[2], ARGV[3], '')
end
return 1
`)

// typeTakeOverScript sets KEYS[1] to our placeholder ARGV[1] with a PX of
// ARGV[2] if it holds another Redis type than a string (a list, a hash: data
// another program left under a cache key, which GET and SET ... GET answer
// with WRONGTYPE). Such a key is foreign data like any undecodable string: a
// miss that the fill overwrites.
var typeTakeOverScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1])
if type(t) == 'table' then t = t.ok or t['ok'] end
if t ~= 'string' then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
return 0
`)

// healScript replaces a placeholder that has no TTL with ours (ARGV[2], PX
// ARGV[3]) if KEYS[1] still holds exactly it (ARGV[1]). Leases are always
// written with a TTL, so such a key was written by something else that looks
// like one: left alone, it would make every reader wait forever.
var healScript = redis.NewScript(`
if redis.call('PTTL', KEYS[1]) == -1 and redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
	return 1
end
return 0
`)

// lease is a held fill lease.
type lease struct {
	key    string
	ph     string // our placeholder
	notify notifyTarget
}

func newLease(key string) (lease, error) {
	var tok [wire.TokenSize]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return lease{}, err
	}
	return lease{key: key, ph: wire.Placeholder(tok)}, nil
}

// acquireCmd is l's attempt, SET key placeholder NX GET PX ttl, not sent yet.
func (l lease) acquireCmd(ctx context.Context, ttl time.Duration) *redis.StatusCmd {
	return redis.NewStatusCmd(ctx, "set", l.key, l.ph, "px", px(ttl), "nx", "get")
}

// acquire sends the attempts of leases, putting each reply in acq; it
// returns the first error, as Pipelined does. A lone attempt (a Get's) goes
// through the queue of its key's node (readbatch.go), sharing a round trip
// with the other single-key commands under way there; several (a
// GetMany's) go in a pipeline of their own.
func (c *Cache[V]) acquire(ctx context.Context, leases []lease, acq []*redis.StatusCmd) error {
	for i, l := range leases {
		acq[i] = l.acquireCmd(ctx, c.cfg.lease)
	}
	if len(leases) == 1 {
		if err := c.send(ctx, leases[0].key, acq[0], nil); err != nil {
			acq[0] = redis.NewStatusCmd(ctx) // the sent one may still be written to
			acq[0].SetErr(err)
		}
		return acq[0].Err()
	}
	return pipe.Send(ctx, c.rdb.Pipeline(), acq)
}

// takeOver replaces foreign bytes under the key with our placeholder.
func (l lease) takeOver(ctx context.Context, rdb redis.UniversalClient, foreign []byte, ttl time.Duration) (bool, error) {
	n, err := swapScript.Run(ctx, rdb, []string{l.key}, foreign, l.ph, px(ttl)).Int()
	return n == 1, err
}

// takeOverType takes a key holding another Redis type.
func (l lease) takeOverType(ctx context.Context, rdb redis.UniversalClient, ttl time.Duration) (bool, error) {
	n, err := typeTakeOverScript.Run(ctx, rdb, []string{l.key}, l.ph, px(ttl)).Int()
	return n == 1, err
}

// fill stores value if the lease is still ours; false means it was not (a
// Delete or a Set won) and nothing was written.
func (l lease) fill(ctx context.Context, rdb redis.UniversalClient, value []byte, ttl time.Duration) (bool, error) {
	n, err := fillScript.Run(ctx, rdb, []string{l.key}, l.fillArgs(value, ttl)...).Int()
	return n == 1, err
}

func (l lease) release(ctx context.Context, rdb redis.UniversalClient) error {
	return releaseScript.Run(ctx, rdb, []string{l.key}, l.releaseArgs()...).Err()
}

// whileLeased runs fn while a goroutine keeps the leases alive, and returns
// once both have finished.
func (c *Cache[V]) whileLeased(ctx context.Context, leases []lease, fn func()) {
	stop := make(chan struct{})
	alive := make(chan struct{})
	go func() {
		defer close(alive)
		c.keepAlive(ctx, leases, stop)
	}()
	fn()
	close(stop)
	<-alive
}

// keepAlive extends the leases every lease/3, in one pipeline, until stop is
// closed or none of them is held any more: a lease found deleted or
// overwritten is dropped, since its fill will be refused anyway.
//
// A failed extension (an error, or no reply within a period) loses nothing
// yet: the lease still has two periods to run. So an attempt is given up
// after one period, leaving time to try again, and after a failure the next
// attempt comes at once (then every period/8), until one succeeds or the
// script says the lease is no longer ours. Waiting for the client's read
// timeout (3 s by default, longer than a lease) or for the next period would
// let a transient fault expire the lease under a live loader, and another
// process would load too. The attempt's deadline bounds a silent connection
// on any client: on one without ContextTimeoutEnabled the attempt is left
// to finish on a goroutine of its own (internal/call) and the next one goes
// out on another connection.
func (c *Cache[V]) keepAlive(ctx context.Context, leases []lease, stop <-chan struct{}) {
	period := c.cfg.lease / 3
	retry := max(period/8, time.Millisecond)
	// The period bounds each attempt even where the client's own timeouts
	// would end it later (Strict).
	bound := c.calls.Strict()
	t := time.NewTimer(period)
	defer t.Stop()
	leases = slices.Clone(leases)
	for len(leases) > 0 {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		calls := make([]script.Call, len(leases))
		for i, l := range leases {
			calls[i] = script.Call{Script: extendScript, Keys: []string{l.key}, Args: []any{l.ph, px(c.cfg.lease)}}
		}
		cmds, err := call.Do(bound, ctx, period, func(ctx context.Context) ([]*redis.Cmd, error) {
			return script.Run(ctx, c.rdb, calls)
		}, nil)
		if err != nil && ctx.Err() == nil {
			c.report(logLeaseExtend, leases[0].key, c.redisError(leases[0].key, "extend lease", fmt.Errorf("%w (retrying)", err)))
		}
		held, failed := leases[:0], false
		for i, l := range leases {
			ok, err := false, err // abandoned (no cmds): every outcome unknown
			if cmds != nil {
				var n int
				n, err = cmds[i].Int()
				ok = err == nil && n == 1
			}
			if c.hooks != nil && c.hooks.onExtend != nil {
				c.hooks.onExtend(l.key, ok, err)
			}
			if err != nil { // not known lost: try again soon
				failed = true
			}
			if ok || err != nil {
				held = append(held, l)
			}
		}
		leases = held
		if failed {
			t.Reset(retry)
		} else {
			t.Reset(period)
		}
	}
}
