package cache

import (
	"context"
	"fmt"

	"github.com/cacheguard/cacheguard/internal/wire"
	"github.com/redis/go-redis/v9"
)

// invalidateTagsScript sets every KEYS[i] (a tag key of one cache: one slot)
// to one time, ARGV[1] (Unix ms), or one more than the latest time one of
// them holds if that is not earlier, and makes each live at least ARGV[2] ms
// more; it returns the time set. So every invalidation makes a tag's time
// grow (two in one millisecond too: an entry whose loader read the first
// is invalidated by the second), and the time stays while an entry created
// before it may live. Values are wire.FormatTagTime's.
var invalidateTagsScript = redis.NewScript(`
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

// maxTagsPerInvalidation bounds one InvalidateTags call (one script, one
// slot).
const maxTagsPerInvalidation = 1024

// InvalidateTags makes every entry carrying one of tags (see WithTags) a miss,
// for every instance and local tier: readers load it again. It writes one key
// per tag, never scans: O(len(tags)). Once it returns, no Get sees an entry
// of those tags loaded before it was called, on this instance at once and on
// the others within the local tier's bound (tagClockMargin applies to the
// instances' clocks: see the package comment on tags). It costs at most one
// more load per key across the fleet, whatever the clocks: the reload of an
// invalidated entry records the tag times it read. No tags is nothing to
// do; an empty tag, one over wire.MaxTagSize bytes or more than 1024 tags
// are an error wrapping ErrInvalidTag (and ErrInvalidOption).
func (c *Cache[V]) InvalidateTags(ctx context.Context, tags ...string) error {
	if c.isClosed() {
		return ErrClosed
	}
	if len(tags) > maxTagsPerInvalidation {
		return fmt.Errorf("%w: %d tags in one call, at most %d", ErrInvalidTag, len(tags), maxTagsPerInvalidation)
	}
	for _, t := range tags {
		if t == "" || len(t) > wire.MaxTagSize {
			return fmt.Errorf("%w: tag of %d bytes, want 1 to %d", ErrInvalidTag, len(t), wire.MaxTagSize)
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
		keys[i] = wire.TagKey(c.cfg.prefix, t)
	}
	now := c.now().UnixMilli()
	hold := 2*c.cfg.ttl + c.cfg.loadTimeout + tagClockMargin
	done, err := c.allow(keys[0])
	if err != nil {
		return err
	}
	// A write that lands after ctx gave up on it is not announced: the
	// other instances learn it when the times they keep expire (the local
	// TTL).
	at, err := boundedWrite(c, ctx, nil, func(ctx context.Context) (int64, error) {
		return invalidateTagsScript.Run(ctx, c.rdb, keys, wire.FormatTagTime(now), px(hold)).Int64()
	}, func(int64) bool { return false })
	err = callerErr(ctx, err)
	done(err)
	if err != nil {
		return c.redisError(tags[0], "invalidate tags", err)
	}
	c.stats.tagInvalidations.Add(uint64(len(tags)))
	c.applyTags(tags, at)
	c.publishTags(ctx, tags, at)
	return nil
}

// applyTags records that tags were invalidated at ms (this instance's own
// invalidation, or another's heard on the channel): the local tier's entries
// carrying them are misses from now on, and reads that started before see
// the clock moved and do not admit what they fetched.
func (c *Cache[V]) applyTags(tags []string, ms int64) {
	if c.local == nil {
		return
	}
	c.invalSeq.Add(1)
	times := make([]int64, len(tags))
	for i := range times {
		times[i] = ms
	}
	c.learnTags(tags, times, c.epoch.Load())
}

// publishTags announces tags invalidated at ms to the other instances, as
// afterWrite does keys.
func (c *Cache[V]) publishTags(ctx context.Context, tags []string, ms int64) {
	c.enqueue(ctx, &pendingInval{tags: tags, tagTime: ms, ctx: context.WithoutCancel(ctx), done: make(chan struct{})})
}
