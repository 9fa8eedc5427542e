package stock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Claims that outlive the work. An entry read or claimed by a consumer
// stays pending with it; another consumer claims it (XAUTOCLAIM) once it
// has been idle for ClaimIdle. A batch takes as long as all its
// applications, so a consumer working through one would see the entries at
// its end claimed by another before it reached them, and both would apply
// them. So before each application, once half of ClaimIdle has passed since
// its entries were last made its own, a consumer acknowledges what it has
// applied and renews the rest in one script (renewScript): an entry still
// pending with it has its idle time reset, and one that another consumer
// took meanwhile is dropped from the batch, not applied. An entry is then
// applied by one consumer at a time as long as one application takes less
// than half of ClaimIdle (a consumer frozen for longer loses its entries,
// as a dead one does).

// renewScript acknowledges the ids ARGV[3 .. 2+ARGV[3]] of the group
// ARGV[1] on the stream KEYS[1], then, for each following id, resets its
// idle time if it is pending with the consumer ARGV[2] (XCLAIM, min idle 0,
// JUSTID: its delivery count stays) and replies the ids that were.
var renewScript = redis.NewScript(`
local group, me, acks = ARGV[1], ARGV[2], tonumber(ARGV[3])
if acks > 0 then
  redis.call('XACK', KEYS[1], group, unpack(ARGV, 4, 3 + acks))
end
local mine = {}
for i = 4 + acks, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], group, ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == me then
    redis.call('XCLAIM', KEYS[1], group, me, 0, ARGV[i], 'JUSTID')
    mine[#mine + 1] = ARGV[i]
  end
end
return mine
`)

// claims tracks the entries of one batch that a consumer holds.
type claims struct {
	renewed time.Time       // when they were last made its own (zero: unknown)
	lost    map[string]bool // taken by another consumer: not to be applied
}

// due reports whether the batch's entries must be renewed before the next
// application.
func (cl *claims) due(idle time.Duration) bool {
	return cl.renewed.IsZero() || time.Since(cl.renewed) >= idle/2
}

// renew acknowledges acks and renews rest, whose ids that another consumer
// took are marked lost.
func (c *Consumer) renew(ctx context.Context, stream string, cl *claims, acks []string, rest []redis.XMessage) error {
	args := make([]any, 0, 3+len(acks)+len(rest))
	if err := c.holdName(ctx); err != nil {
		return err
	}
	args = append(args, c.cfg.group, c.name(), len(acks))
	for _, id := range acks {
		args = append(args, id)
	}
	for _, m := range rest {
		args = append(args, m.ID)
	}
	sent := time.Now()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	mine, err := do(c.calls, rctx, func(ctx context.Context) ([]string, error) {
		return renewScript.Run(ctx, c.inv.rdb, []string{stream}, args...).StringSlice()
	})
	if err != nil {
		return err
	}
	held := make(map[string]bool, len(mine))
	for _, id := range mine {
		held[id] = true
	}
	for _, m := range rest {
		if !held[m.ID] {
			if cl.lost == nil {
				cl.lost = map[string]bool{}
			}
			cl.lost[m.ID] = true
		}
	}
	cl.renewed = sent
	return nil
}
