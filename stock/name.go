package stock

import (
	"context"
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/internal/kind"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// One live consumer per name. Consumers of a group that share a name share
// its pending entries: each would apply the other's (a name taken from a
// configuration every instance reads). So a consumer holds its name in
// Redis (wire.StockConsumerKey: its token, with a lease of nameLease),
// renewed at every pass and with every renewal of its entries (claim.go);
// one that finds its name held by another live consumer takes a name of its
// own (the name, "-" and a random suffix), reports it to the logger and
// counts it (ConsumerStats.NameConflicts). Close gives the name back, so a
// process restarted under it gets its pending entries back at once; one
// that crashed leaves the name held for the lease.

// nameScript holds the name at KEYS[1] for the token ARGV[1] for ARGV[2]
// ms: 1 if it was free or the token's already, 0 if another token holds it.
var nameScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// releaseNameScript deletes the name at KEYS[1] if the token ARGV[1] holds
// it.
var releaseNameScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// nameLease is how long a consumer's name stays held without a renewal: a
// pass renews it, and a long batch renews it every half ClaimIdle.
func (c *Consumer) nameLease() time.Duration { return max(c.cfg.claimIdle, 5*time.Second) }

// name is the name the consumer goes by now.
func (c *Consumer) name() string { return *c.current.Load() }

// holdName holds the consumer's name, or takes a name of its own when
// another live consumer holds it.
func (c *Consumer) holdName(ctx context.Context) error {
	for range 3 {
		name := c.name()
		rctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
		held, err := do(c.calls, rctx, func(ctx context.Context) (int64, error) {
			return nameScript.Run(ctx, c.inv.rdb, []string{wire.StockConsumerKey(c.inv.cfg.ns, c.cfg.group, name)},
				c.token, c.nameLease().Milliseconds()).Int64()
		})
		cancel()
		if err != nil {
			return kind.Errorf("cacheguard: stock: consumer: hold the name %q: %w", name, err)
		}
		if held == 1 {
			return nil
		}
		own := c.cfg.name + "-" + newID()[:6]
		c.nameConflicts.Add(1)
		c.report.Logger.Warn("cacheguard: stock: consumer: another live consumer goes by this name; this one takes a name of its own",
			"name", name, "own", own, "group", c.cfg.group)
		c.current.Store(&own)
		c.resumed.Clear() // the new name has no pending entries to resume
	}
	return fmt.Errorf("cacheguard: stock: consumer: no free name after 3 tries (from %q)", c.cfg.name)
}

// nameGiveBack bounds the give-back of the name when Close's own deadline
// has passed (a pass had to be aborted).
const nameGiveBack = 250 * time.Millisecond

// releaseName gives the name back (Close), within ctx and the timeout.
func (c *Consumer) releaseName(ctx context.Context) {
	name := c.name()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	err := doErr(c.calls, rctx, func(ctx context.Context) error {
		return releaseNameScript.Run(ctx, c.inv.rdb, []string{wire.StockConsumerKey(c.inv.cfg.ns, c.cfg.group, name)}, c.token).Err()
	})
	if err != nil {
		c.report.Warn("cacheguard: stock: consumer: give the name back (held until its lease runs out)", err, "name", name)
	}
}
