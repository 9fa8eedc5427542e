package generation

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cacheguard/cacheguard/cache/internal/telemetry"
	"github.com/cacheguard/cacheguard/internal/call"
	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The generation in Redis, and what happens when Redis forgets it.
//
// Generations are never reused: a new one (Clear, or a key found lost) is
// above the one under the key, above the caller's own and at least the
// Redis server's clock in microseconds (wire.GenerationFloorLua), so it is
// above every generation any instance used before, even when the key was
// lost since (FLUSHALL, a restart without persistence, a failover to a
// replica that never saw it), as long as the clock of the server that
// makes it is not behind the clock of the one that made the last.
//
// Every instance also syncs with the key: right after New, after a
// subscription gap and every health interval (WithInvalidationHealthCheck),
// syncScript sends the instance's generation and replies the key's, which
// the instance moves to if it is newer. The sync runs once per process and
// go-redis client for all its caches (shared.go): one EVALSHA, whose one
// MGET reads every cache's key (all generation keys share one hash slot,
// wire.GenerationKey), so its cost does not grow with the caches; so an instance that
// cannot hear the invalidation channel (its subscription down, or refused
// to a user without channel permission) still learns a Clear within the
// health bound H (interval + timeout). If the key is missing, or lower than
// the instance's own generation, while the instance has one (Redis forgot
// a Clear), the script makes a new generation, as a Clear would, and the
// instance announces it: instances that disagreed (one at the generation
// before, one started after the key was lost) each wrote under their own
// generation, and a Delete of one did not reach what the other reads; in
// the new generation neither reads what anyone wrote before. Redis lost
// those entries with the key, mostly, so it costs little more than what
// Redis lost (a key evicted alone, by an allkeys eviction policy, or a
// cluster master flushed alone, costs one reload per key, as a Clear).

// generationLua defines next_generation(key, cur, own): a generation above
// cur and own and at least the server clock's floor, stored under key.
var generationLua = wire.GenerationFloorLua + `
local function next_generation(key, cur, own)
  local g = math.max(cur + 1, own + 1, generation_floor())
  redis.call('SET', key, string.format('%.0f', g))
  return g
end
`

// clearScript moves the generation at KEYS[1] on past itself and past the
// caller's generation ARGV[1], and replies the new one.
var clearScript = redis.NewScript(generationLua + `
local cur = tonumber(redis.call('GET', KEYS[1])) or 0
return next_generation(KEYS[1], cur, tonumber(ARGV[1]))
`)

// syncScript syncs the caches of KEYS (their generation keys) whose own
// generations are ARGV, in one MGET: it replies {generation, made} for each
// key in turn, the generation under the key, or a new one it made (made =
// 1) because the key was missing (or held no number) or was below the
// caller's generation while the caller had one.
var syncScript = redis.NewScript(generationLua + `
local cur = redis.call('MGET', unpack(KEYS))
local out = {}
for i, key in ipairs(KEYS) do
  local c = tonumber(cur[i]) or 0
  local own = tonumber(ARGV[i])
  if own > 0 and c < own then
    out[#out + 1] = next_generation(key, c, own)
    out[#out + 1] = 1
  else
    out[#out + 1] = c
    out[#out + 1] = 0
  end
end
return out
`)

// maxSyncKeys bounds the keys of one syncScript call (Lua's unpack takes a
// few thousand values at most).
const maxSyncKeys = 512

// syncMany syncs members in calls of maxSyncKeys keys on rdb, each bounded
// by ctx, and applies each reply to its member; a call that fails is told
// to its members. It returns the first error.
func syncMany(ctx context.Context, b call.Bound, rdb redis.UniversalClient, members []*Generations) error {
	var first error
	for len(members) > 0 {
		chunk := members[:min(len(members), maxSyncKeys)]
		members = members[len(chunk):]
		keys := make([]string, len(chunk))
		owns := make([]any, len(chunk))
		for i, m := range chunk {
			keys[i], owns[i] = wire.GenerationKey(m.keys.Prefix()), m.keys.Gen()
		}
		reply, err := call.Do(b, ctx, 0, func(ctx context.Context) ([]int64, error) {
			return syncScript.Run(ctx, rdb, keys, owns...).Int64Slice()
		}, nil)
		if err == nil && len(reply) != 2*len(chunk) {
			err = fmt.Errorf("unexpected reply %v", reply)
		}
		for i, m := range chunk {
			if err != nil {
				m.syncFailed(ctx, err)
				continue
			}
			m.synced(reply[2*i], reply[2*i+1])
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// synced applies one cache's part of syncScript's reply: the generation g,
// made by this sync or not.
func (c *Generations) synced(g int64, made int64) {
	if c.life.Closed() {
		return
	}
	if g < 0 {
		c.syncFailed(c.life.Closing(), fmt.Errorf("unexpected generation %d", g))
		return
	}
	c.keys.Move(uint64(g))
	if made == 1 {
		// Announced even when this instance has already moved to g (a
		// sync that a later one overtook): the others would otherwise
		// wait for their own sync.
		c.rec.Report(telemetry.Generation, "", fmt.Errorf("cacheguard: cache: the generation of %q was lost in Redis (FLUSHALL, restart, failover): the cache moved to a new generation %d, as on a Clear", c.keys.Prefix(), g))
		c.bus.Publish(c.life.Closing(), []string{wire.GenerationAnnouncement(uint64(g))})
	}
	c.ready(nil)
}

// syncFailed reports a sync that did not answer; the next one comes at
// the next health interval.
func (c *Generations) syncFailed(ctx context.Context, err error) {
	c.lastErr.Store(&err)
	if ctx.Err() == nil && !c.life.Closed() {
		c.rec.Report(telemetry.Generation, "", c.redis.Error("", "sync generation of "+strconv.Quote(c.keys.Prefix()), err))
	}
}

// NewSyncClient returns the client the sync runs on, and its Close: a copy
// of a *redis.Client or *redis.ClusterClient that honours context deadlines
// (ContextTimeoutEnabled) and does not retry, so that a sync waiting on a
// frozen node holds neither the next sync nor Close past the health timeout
// (go-redis otherwise reads a reply within the client's read timeout
// whatever the context says), and which Close closes. Other clients (a
// ring) are used as they are.
func NewSyncClient(rdb redis.UniversalClient) (redis.UniversalClient, func() error) {
	switch r := rdb.(type) {
	case *redis.Client:
		o := pubsub.CopyOptions(r.Options())
		o.ContextTimeoutEnabled, o.MaxRetries, o.PoolSize, o.MinIdleConns = true, -1, 2, 0
		s := redis.NewClient(&o)
		return s, s.Close
	case *redis.ClusterClient:
		o := pubsub.CopyClusterOptions(r.Options())
		o.ContextTimeoutEnabled, o.MaxRetries, o.PoolSize, o.MinIdleConns = true, -1, 2, 0
		s := redis.NewClusterClient(&o)
		return s, s.Close
	}
	return rdb, func() error { return nil }
}
