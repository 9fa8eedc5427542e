package cache

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/internal/script"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Waking lease waiters by notification. A caller that finds another
// process's placeholder under a key does not just poll for the fill: it
//
//  1. registers with this Cache's fill listener (notify_listen.go), which
//     subscribes, on one pub/sub connection per Redis node, to the key's
//     fill channel and confirms the subscription;
//  2. marks the placeholder as waited for (markWaitScript appends
//     wire.WaitMark);
//  3. waits for a message on the channel, retrying SET NX GET when it comes.
//
// The fill's compare-and-set (fillScript), a release (releaseScript) and a
// refused fill publish on the key's fill channel; a fill or release publishes
// only when the placeholder was marked, so fills nobody waits for pay nothing
// extra. On a Redis Cluster the channel is a shard channel (SPUBLISH) named
// exactly like the key, so it hashes to the key's slot, as a script's
// commands must.
//
// Pub/sub delivers at most once, so waiters keep polling too, only less often
// while notifications work (notifiedPoll instead of the 2-50 ms backoff): a
// lost message costs at most one poll interval, and a lease whose holder died
// is still taken over once it expires. Where notifications cannot work (a
// Ring, a server without SPUBLISH, a subscription that is not confirmed in
// time) waiters poll as before.

// notifiedPoll is how often a waiter that will be notified still retries
// (at most; see Cache.notifiedPoll).
const notifiedPoll = 200 * time.Millisecond

// confirmTimeout bounds the wait for a new subscription's confirmation; past
// it, the waiter polls.
const confirmTimeout = 50 * time.Millisecond

// fillScript stores ARGV[2] (PX ARGV[3]) in KEYS[1] if it holds our
// placeholder ARGV[1] (marked or not, with or without a kept version: see
// owns in wire.Lua) and returns 1; else it returns 0. A version the placeholder kept
// is written into the envelope's header (versionkeep.go). When the
// placeholder was marked, or the fill is refused (a write replaced the
// placeholder; its waiters should look again), it publishes with ARGV[4]
// (PUBLISH or SPUBLISH, empty for none) on channel ARGV[5]. pcall: a server
// that lacks the command still fills.
var fillScript = redis.NewScript(wire.Lua + `
local cur = redis.call('GET', KEYS[1])
local mine, marked = owns(cur, ARGV[1])
if mine then
	local new = ARGV[2]
	local ver = placeholder_version(cur)
	if ver and is_envelope(new) then
		new = with_version(new, ver)
	end
	redis.call('SET', KEYS[1], new, 'PX', ARGV[3])
	if marked and ARGV[4] ~= '' then
		redis.pcall(ARGV[4], ARGV[5], '')
	end
	return 1
end
if ARGV[4] ~= '' then
	redis.pcall(ARGV[4], ARGV[5], '')
end
return 0
`)

// markWaitScript marks the placeholder whose base (magic and token) is
// ARGV[1] under KEYS[1] as waited for (APPEND keeps its TTL and any kept
// version). It returns 1 if KEYS[1] holds it (marked now or before), 0 if the
// key changed meanwhile: look again at once.
var markWaitScript = redis.NewScript(wire.Lua + `
local mine, marked = owns(redis.call('GET', KEYS[1]), ARGV[1])
if not mine then
	return 0
end
if not marked then
	redis.call('APPEND', KEYS[1], WAIT_MARK)
end
return 1
`)

// notifyTarget is where a lease's fill publishes: cmd is "publish",
// "spublish" or "" (none).
type notifyTarget struct {
	cmd, channel string
}

func (l lease) fillArgs(value []byte, ttl time.Duration) []any {
	return []any{l.ph, value, px(ttl), l.notify.cmd, l.notify.channel}
}

func (l lease) releaseArgs() []any { return []any{l.ph, l.notify.cmd, l.notify.channel} }

// newLease returns a lease on rkey that publishes on rkey's fill channel.
func (c *Cache[V]) newLease(rkey string) (lease, error) {
	l, err := newLease(rkey)
	l.notify = c.notifyTarget(rkey)
	return l, err
}

func (c *Cache[V]) notifyTarget(rkey string) notifyTarget {
	switch c.rdb.(type) {
	case *redis.Ring:
		// A ring shards channels and keys apart: no script could reach
		// the key's channel.
		return notifyTarget{}
	case *redis.ClusterClient:
		return notifyTarget{"spublish", rkey}
	}
	return notifyTarget{"publish", wire.FillChannelPrefix + rkey}
}

// markWaited marks the placeholders prev[i] of keys as waited for, in one
// pipeline; it returns which ones still held them (false: look again now).
func (c *Cache[V]) markWaited(ctx context.Context, keys []string, prev [][]byte) ([]bool, error) {
	calls := make([]script.Call, len(keys))
	for i, k := range keys {
		calls[i] = script.Call{Script: markWaitScript, Keys: []string{k}, Args: []any{wire.PlaceholderBase(prev[i])}}
	}
	cmds, err := script.Run(ctx, c.rdb, calls)
	held := make([]bool, len(keys))
	for i, cmd := range cmds {
		n, _ := cmd.Int()
		held[i] = n == 1
		if held[i] && c.hooks != nil && c.hooks.onWaitMarked != nil {
			c.hooks.onWaitMarked(keys[i])
		}
	}
	return held, err
}
