package generation

import (
	"context"
	"fmt"
	"time"

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
// Every instance also syncs with the key: at New, after a subscription gap
// and every health interval (WithInvalidationHealthCheck), one script
// (syncScript, one EVALSHA) sends the instance's generation and replies the
// key's, which the instance moves to if it is newer: so an instance that
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

// generationLua defines next_generation(cur, own): a generation above cur
// and own and at least the server clock's floor, stored under KEYS[1].
var generationLua = wire.GenerationFloorLua + `
local function next_generation(cur, own)
  local g = math.max(cur + 1, own + 1, generation_floor())
  redis.call('SET', KEYS[1], string.format('%.0f', g))
  return g
end
`

// clearScript moves the generation at KEYS[1] on past itself and past the
// caller's generation ARGV[1], and replies the new one.
var clearScript = redis.NewScript(generationLua + `
local cur = tonumber(redis.call('GET', KEYS[1])) or 0
return next_generation(cur, tonumber(ARGV[1]))
`)

// syncScript replies {generation, made}: the generation at KEYS[1], or a
// new one it made (made = 1) because the key was missing or below the
// caller's generation ARGV[1] while the caller had one.
var syncScript = redis.NewScript(generationLua + `
local cur = tonumber(redis.call('GET', KEYS[1])) or 0
local own = tonumber(ARGV[1])
if own > 0 and cur < own then
  return {next_generation(cur, own), 1}
end
return {cur, 0}
`)

// Sync runs syncScript and moves to its reply; a generation it
// made is announced. If ctx ends first, the reply is applied when it comes.
func (c *Generations) Sync(ctx context.Context) error {
	own := c.keys.Gen()
	reply, err := call.Do(c.redis.Calls().Strict(), ctx, c.cfg.HealthTimeout, func(ctx context.Context) ([]int64, error) {
		return syncScript.Run(ctx, c.syncRDB, []string{wire.GenerationKey(c.keys.Prefix())}, own).Int64Slice()
	}, func(reply []int64, err error) {
		if err == nil {
			c.synced(c.life.Closing(), reply)
		}
	})
	if err != nil {
		return fmt.Errorf("cacheguard: cache: sync the generation of %q: %w", c.keys.Prefix(), err)
	}
	return c.synced(ctx, reply)
}

// synced applies syncScript's reply.
func (c *Generations) synced(ctx context.Context, reply []int64) error {
	if len(reply) != 2 || reply[0] < 0 {
		return fmt.Errorf("cacheguard: cache: sync the generation of %q: unexpected reply %v", c.keys.Prefix(), reply)
	}
	g := uint64(reply[0])
	c.keys.Move(g)
	if reply[1] == 1 {
		// Announced even when this instance has already moved to g (a
		// reply that came after its caller gave up, and after a later sync
		// read g): the others would otherwise wait for their own sync.
		c.rec.Report(telemetry.Generation, "", fmt.Errorf("cacheguard: cache: the generation of %q was lost in Redis (FLUSHALL, restart, failover): the cache moved to a new generation %d, as on a Clear", c.keys.Prefix(), g))
		c.bus.Publish(ctx, []string{wire.GenerationAnnouncement(g)})
	}
	return nil
}

// Resync syncs the generation in the background after a subscription
// gap, in which an announcement may have been lost.
func (c *Generations) Resync() {
	c.life.Go(func() { c.syncReported() })
}

// syncReported is Sync with its error reported.
func (c *Generations) syncReported() {
	if err := c.Sync(c.life.Closing()); err != nil && c.life.Closing().Err() == nil {
		c.rec.Report(telemetry.Generation, "", c.redis.Error("", "sync generation", err))
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
		o := *r.Options()
		o.ContextTimeoutEnabled, o.MaxRetries, o.PoolSize, o.MinIdleConns = true, -1, 2, 0
		s := redis.NewClusterClient(&o)
		return s, s.Close
	}
	return rdb, func() error { return nil }
}

// Run syncs the generation every health interval until Close.
func (c *Generations) Run() {
	t := time.NewTicker(c.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-c.life.Closing().Done():
			return
		case <-t.C:
			c.syncReported()
		}
	}
}
