package engine

import (
	"context"
	"time"

	"github.com/cacheguard/cacheguard/cache/internal/entry"
	"github.com/cacheguard/cacheguard/cache/internal/errs"
	"github.com/cacheguard/cacheguard/internal/wire"
)

// dropInvalidated replaces by nil each of raws (values read under keys) that
// is a tagged envelope invalidated by one of its tags, counting it if count
// (a read's first look, not the fill path's second). The times not known
// here (or known older than an entry's loader read them) are read with one
// MGET. It returns the times it used, all read before it returns: a load
// started after it may record them (entry.NewStamp). On an error raws are left as
// they are.
func (c *Engine[V]) dropInvalidated(ctx context.Context, key string, raws [][]byte, count bool) (map[string]int64, error) {
	var stamps []*entry.Stamp
	var at []int
	for i, raw := range raws {
		if !wire.IsTagged(raw) {
			continue
		}
		if info, ok := wire.ParseTags(raw); ok {
			stamps, at = append(stamps, entry.StampOf(info)), append(at, i)
		}
	}
	if len(stamps) == 0 {
		return nil, nil
	}
	floor := map[string]int64{} // the latest time an entry's loader read
	for _, st := range stamps {
		for i, tag := range st.Tags {
			floor[tag] = max(floor[tag], st.SeenOf(i))
		}
	}
	now := time.Now().UnixNano()
	epoch, trusted := c.Tier.TagTrust(now)
	known := make(map[string]int64, len(floor))
	var need []string
	for tag, seen := range floor {
		if ms, ok := c.Tier.TagTime(tag, epoch, now); trusted && ok && ms >= seen {
			known[tag] = ms
			continue
		}
		need = append(need, tag)
	}
	if len(need) > 0 {
		ms, err := c.readTagTimes(ctx, key, need)
		if err != nil {
			return nil, err
		}
		for i, tag := range need {
			known[tag] = ms[i]
		}
		if trusted {
			c.Tier.LearnTags(need, ms, epoch)
		}
	}
	for j, st := range stamps {
		for i, tag := range st.Tags {
			if st.InvalidBy(i, known[tag]) {
				raws[at[j]] = nil
				if count {
					c.Rec.TagMisses.Add(1)
				}
				break
			}
		}
	}
	return known, nil
}

// readTagTimes reads the times of tags (0: never invalidated) with one MGET
// (all in one slot).
func (c *Engine[V]) readTagTimes(ctx context.Context, key string, tags []string) ([]int64, error) {
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = wire.TagKey(c.Keys.Prefix(), t)
	}
	done, err := c.Redis.Allow(key)
	if err != nil {
		return nil, err
	}
	vals, err := c.Redis.Client().MGet(ctx, keys...).Result()
	err = errs.Caller(ctx, err)
	done(err)
	c.Rec.TagReads.Add(1)
	if err != nil {
		if errs.IsCtx(err) {
			return nil, err
		}
		return nil, c.Redis.Error(key, "read tag times", err)
	}
	ms := make([]int64, len(tags))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // never invalidated (or expired: older than any entry)
		}
		t, ok := wire.ParseTagTime(s)
		if !ok {
			// Foreign bytes under a tag key: count the tag as invalidated
			// now, so that nothing is served on its strength.
			c.Rec.Corrupt.Add(1)
			t = time.Now().UnixMilli()
		}
		ms[i] = t
	}
	return ms, nil
}

// dropInvalidatedMany is dropInvalidated for the replies of a batch's GETs
// (or the fill path's SET ... GETs): raws[i] is gets[i]'s value if it is a
// tagged envelope that no tag invalidated, else nil; seen are the tag times
// used.
func dropInvalidatedMany[V any, R stringReply](c *Engine[V], ctx context.Context, keys []string, gets []R, count bool) (raws [][]byte, seen map[string]int64, err error) {
	raws = make([][]byte, len(gets))
	tagged := false
	for i, g := range gets {
		// Only tagged values are copied out (Bytes copies).
		if g.Err() == nil && wire.IsTagged(g.Val()) {
			raws[i], _ = g.Bytes()
			tagged = true
		}
	}
	if !tagged {
		return raws, nil, nil
	}
	seen, err = c.dropInvalidated(ctx, keys[0], raws, count)
	return raws, seen, err
}

// stringReply is a GET's or a SET ... GET's reply.
type stringReply interface {
	Val() string
	Err() error
	Bytes() ([]byte, error)
}
