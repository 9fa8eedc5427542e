package write

import (
	"context"
	"fmt"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// InvalidateTagsScript sets every KEYS[i] (a tag key of one cache: one slot)
// to one time, ARGV[1] (Unix ms), or one more than the latest time one of
// them holds if that is not earlier, and makes each live at least ARGV[2] ms
// more; it returns the time set. So every invalidation makes a tag's time
// grow (two in one millisecond too: an entry whose loader read the first
// is invalidated by the second), and the time stays while an entry created
// before it may live. Values are wire.FormatTagTime's.
var InvalidateTagsScript = redis.NewScript(`
local t, hold = tonumber(ARGV[1]), tonumber(ARGV[2])
for _, k in ipairs(KEYS) do
	local cur = tonumber(redis.call('GET', k) or '')
	if cur and cur >= t then
		t = cur + 1
	end
end
local v = string.format('%.0f', t)
for _, k in ipairs(KEYS) do
	redis.call('SET', k, v, 'PX', math.max(hold, redis.call('PTTL', k)))
end
return t
`)

// MaxTagsPerInvalidation bounds one InvalidateTags call (one script, one
// slot).
const MaxTagsPerInvalidation = 1024

// InvalidateTags is cache.InvalidateTags, which documents it.
func (c *Writer[V]) InvalidateTags(ctx context.Context, tags ...string) error {
	if c.Life.Closed() {
		return errs.ErrClosed
	}
	if len(tags) > MaxTagsPerInvalidation {
		return fmt.Errorf("%w: %d tags in one call, at most %d", errs.ErrInvalidArgument, len(tags), MaxTagsPerInvalidation)
	}
	for _, t := range tags {
		if t == "" || len(t) > wire.MaxTagSize {
			return fmt.Errorf("%w: tag of %d bytes, want 1 to %d", errs.ErrInvalidArgument, len(t), wire.MaxTagSize)
		}
	}
	if len(tags) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = wire.TagKey(c.Keys.Prefix(), t)
	}
	now := c.Format.Now().UnixMilli()
	hold := 2*c.Format.TTL() + c.cfg.LoadTimeout + entry.TagClockMargin
	done, err := c.Redis.Allow(keys[0])
	if err != nil {
		return err
	}
	// A write that lands after ctx gave up on it is not announced: the
	// other instances learn it when the times they keep expire (the local
	// TTL).
	at, err := boundedWrite(c, ctx, nil, func(ctx context.Context) (int64, error) {
		return InvalidateTagsScript.Run(ctx, c.Redis.Client(), keys, wire.FormatTagTime(now), entry.PX(hold)).Int64()
	}, func(int64) bool { return false })
	err = errs.Caller(ctx, err)
	done(err)
	if err != nil {
		return c.Redis.Error(tags[0], "invalidate tags", err)
	}
	c.Rec.TagInvalidations.Add(uint64(len(tags)))
	c.Tier.ApplyTags(tags, at)
	c.bus.PublishTags(ctx, tags, at)
	return c.replicated(ctx, "invalidate tags", tags[0], keys)
}
