package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cacheguard/cacheguard/internal/wire"
)

// Tags. WithTags gives every entry the tags its function returns for the
// key and the value; InvalidateTags(t) makes every entry carrying t a miss
// for every instance and local tier, without scanning keys and without an
// index of the entries of a tag. The model, checked lazily on read:
//
//   - A tagged entry records its tags and its creation time, the time its
//     load started (or its Set or versioned write was made), in a tag
//     section of its envelope (wire.FlagTagged). An untagged entry's bytes
//     are unchanged, and so is its Redis hit. A fill also records, for each
//     of its tags whose time its loader had read before the load started,
//     that time (its seen time, wire.FlagTagSeen): the fill path reads the
//     times of the tags of any tagged entry it finds under its keys, so a
//     reload of an entry found invalidated records the times that
//     invalidated it.
//   - InvalidateTags writes under each tag's key (one key per tag, all of a
//     cache's tag keys under one Cluster hash tag, so one script writes them
//     and one MGET reads any set of them) a time that grows with every
//     invalidation: the current time, or one more than the latest time
//     stored under those keys if that is not earlier (two invalidations in
//     one millisecond still differ). It is kept while an older entry may
//     live (2·TTL + load timeout), and the tags and that time are announced
//     on the cache's invalidation channel.
//   - An entry is invalidated by one of its tags by the rule of
//     tagStamp.invalidBy, the one check of every path (a Redis hit, a
//     GetMany's hits, the fill path, a local hit). Where the entry records
//     the tag's seen time, exactly when the tag's time is later: no clock is
//     involved, so the entry its loader filled is valid for the
//     invalidation it saw and invalid for any later one. Elsewhere (a load
//     of a missing key, a Set, a versioned write, an early refresh, or a
//     tag time earlier than the seen one: Redis forgot the tag's time and
//     an invalidation set it again), by the clocks: created ≤ invalidated +
//     tagClockMargin. Those times are the wall clocks of the instances that
//     loaded and invalidated, so they must agree within tagClockMargin (100
//     ms): within it, a load that started before an invalidation never
//     lands as fresh, and one started within the margin after it counts as
//     invalidated too.
//   - So a load that started before InvalidateTags was called lands already
//     invalid (its seen time, if any, is older than the new time; without
//     one, the clocks), the same rule as a fill after Delete, with no lease
//     in the way. And an invalidation costs at most one more load per key
//     across the fleet, whatever the margin: the reader that finds the entry
//     invalidated reloads it under the lease (one loader across the fleet,
//     the others wait for its fill and take it), and its fill records the
//     time. An entry without seen times invalidated only by the margin (a
//     load of a missing key, a Set made just after the invalidation, a load
//     in flight during it) is that one more load: its reload records the
//     time. The exception is an instance with a local tier that has not
//     heard an invalidation yet (the local tier's bound): a reload it makes
//     meanwhile records the older time it keeps, lands invalid, and is
//     reloaded once more.
//   - A tagged Redis hit reads the times of its tags with one MGET (one
//     more round trip; a GetMany's tagged hits share one). An instance with
//     a local tier keeps the times it read or heard for the local TTL, under
//     the same trust as the tier (the subscription's epoch and health
//     replies: a lost message or a gap drops them all), so its tagged hits
//     usually cost nothing extra; a kept time older than an entry's seen
//     time is read from Redis again. Its local entries keep their tag
//     sections and are checked against those times on every local hit, so
//     an invalidation heard from another instance makes them misses within
//     the bound the local tier documents. A time past its local TTL is no
//     longer trusted as the latest, but still invalidates what it
//     invalidated (a tag's time only grows), so such an entry is not served
//     stale either while Redis fails.
//   - An invalidated entry read through the fill path is taken over like
//     foreign bytes (its version, if any, is kept) and loaded again.
//
// Absences are not tagged (there is no value to ask for tags). Limits:
// wire.MaxTags tags per entry, wire.MaxTagSize bytes per tag, no empty tag;
// a value outside them is an error for Set and is served but not cached by
// a fill (reported like a value too large).

// tagClockMargin is how far apart the instances' wall clocks may be (see
// above).
const tagClockMargin = 100 * time.Millisecond

// maxTagTimes bounds the times an instance keeps; past it they start over.
const maxTagTimes = 1 << 16

// ErrInvalidTag is returned for a tag list outside the limits (too many
// tags, a tag too long, an empty tag), by Set and InvalidateTags, and
// reported for a fill. It wraps ErrInvalidOption.
var ErrInvalidTag = fmt.Errorf("%w: invalid tag", ErrInvalidOption)

// WithTags tags every entry with the tags fn returns for its key and value
// (nil or empty: untagged), so that InvalidateTags can invalidate all the
// entries of a tag at once. fn must be fast, and safe for concurrent use. V
// must be the Cache's value type: New rejects another with an error
// wrapping ErrInvalidOption.
func WithTags[V any](fn func(key string, v V) []string) Option {
	return func(c *config) {
		if fn == nil {
			c.errs.Invalid("nil tag function")
			return
		}
		c.tags = fn
	}
}

// tagFuncOf checks the function WithTags stored against V.
func tagFuncOf[V any](f any) (func(string, V) []string, error) {
	if f == nil {
		return nil, nil
	}
	fn, ok := f.(func(string, V) []string)
	if !ok {
		var zero V
		return nil, fmt.Errorf("%w: WithTags function is a %T, not a func(string, %T) []string", ErrInvalidOption, f, zero)
	}
	return fn, nil
}

// tagsOf returns v's tags, checked against the limits; a panic of the tag
// function is an error.
func (c *Cache[V]) tagsOf(key string, v V) (tags []string, err error) {
	if c.tagFn == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			tags, err = nil, fmt.Errorf("%w: tag function for %q panicked: %v", ErrInvalidTag, key, p)
		}
	}()
	tags = c.tagFn(key, v)
	if err := wire.CheckTags(tags); err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrInvalidTag, key, err)
	}
	return tags, nil
}

// tagTable holds the tag times an instance with a local tier read or heard,
// for one subscription epoch, each for the local TTL.
type tagTable struct {
	mu    sync.RWMutex
	epoch uint64
	times map[string]tagTime
}

type tagTime struct{ ms, until int64 } // until: unix nanos

func (t *tagTable) get(tag string, epoch uint64, now int64) (int64, bool) {
	ms, fresh := t.lookup(tag, epoch, now)
	return ms, fresh
}

// lookup returns tag's time known in epoch (0: none) and whether it is still
// to be trusted as the latest. A time past its trust still invalidates what
// it invalidated: a tag's time only grows.
func (t *tagTable) lookup(tag string, epoch uint64, now int64) (ms int64, fresh bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	tt, ok := t.times[tag]
	if !ok || t.epoch != epoch {
		return 0, false
	}
	if now >= tt.until {
		return tt.ms, false
	}
	return tt.ms, true
}

// put records times of tags known in epoch; a time never goes back.
func (t *tagTable) put(tags []string, ms []int64, epoch uint64, until int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.epoch != epoch {
		if epoch < t.epoch {
			return
		}
		t.epoch, t.times = epoch, nil
	}
	if t.times == nil || len(t.times)+len(tags) > maxTagTimes {
		t.times = make(map[string]tagTime, len(tags))
	}
	for i, tag := range tags {
		m := ms[i]
		if old, ok := t.times[tag]; ok && old.ms > m {
			m = old.ms
		}
		t.times[tag] = tagTime{ms: m, until: until}
	}
}

// tagTrust returns the epoch whose tag times may be used now, and false when
// none may (no local tier, or it is not trusted).
func (c *Cache[V]) tagTrust(now int64) (uint64, bool) {
	if c.local == nil {
		return 0, false
	}
	e := c.epoch.Load()
	return e, e%2 == 0 && now < c.trustUntil.Load()
}

// learnTags records tag times read from Redis or heard from another
// instance, known in epoch.
func (c *Cache[V]) learnTags(tags []string, ms []int64, epoch uint64) {
	if c.local == nil || epoch != c.epoch.Load() {
		return
	}
	c.tagTimes.put(tags, ms, epoch, time.Now().Add(c.cfg.local.ttl).UnixNano())
}

// localTagsValid checks a local entry's tags against the times this
// instance knows; unknown means not valid (the read goes to Redis), and so
// does a time older than the one the entry's loader read (this instance
// has not heard of it yet). servable is false when a tag is known to have
// invalidated the entry.
func (c *Cache[V]) localTagsValid(e *LocalEntry[V], now int64) (valid, servable bool) {
	epoch, ok := c.tagTrust(now)
	valid = ok
	st := e.tagged
	for i, tag := range st.tags {
		ms, known := c.tagTimes.lookup(tag, epoch, now)
		if ms < st.seenOf(i) {
			valid = false
			continue
		}
		if st.invalidBy(i, ms) { // known or not: a time only grows
			return false, false
		}
		valid = valid && known
	}
	return valid, true
}

// dropInvalidated replaces by nil each of raws (values read under keys) that
// is a tagged envelope invalidated by one of its tags, counting it if count
// (a read's first look, not the fill path's second). The times not known
// here (or known older than an entry's loader read them) are read with one
// MGET. It returns the times it used, all read before it returns: a load
// started after it may record them (newStamp). On an error raws are left as
// they are.
func (c *Cache[V]) dropInvalidated(ctx context.Context, key string, raws [][]byte, count bool) (map[string]int64, error) {
	var stamps []*tagStamp
	var at []int
	for i, raw := range raws {
		if !wire.IsTagged(raw) {
			continue
		}
		if info, ok := wire.ParseTags(raw); ok {
			stamps, at = append(stamps, stampOf(info)), append(at, i)
		}
	}
	if len(stamps) == 0 {
		return nil, nil
	}
	floor := map[string]int64{} // the latest time an entry's loader read
	for _, st := range stamps {
		for i, tag := range st.tags {
			floor[tag] = max(floor[tag], st.seenOf(i))
		}
	}
	now := time.Now().UnixNano()
	epoch, trusted := c.tagTrust(now)
	known := make(map[string]int64, len(floor))
	var need []string
	for tag, seen := range floor {
		if ms, ok := c.tagTimes.get(tag, epoch, now); trusted && ok && ms >= seen {
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
			c.learnTags(need, ms, epoch)
		}
	}
	for j, st := range stamps {
		for i, tag := range st.tags {
			if st.invalidBy(i, known[tag]) {
				raws[at[j]] = nil
				if count {
					c.stats.tagMisses.Add(1)
				}
				break
			}
		}
	}
	return known, nil
}

// readTagTimes reads the times of tags (0: never invalidated) with one MGET
// (all in one slot).
func (c *Cache[V]) readTagTimes(ctx context.Context, key string, tags []string) ([]int64, error) {
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = wire.TagKey(c.cfg.prefix, t)
	}
	done, err := c.allow(key)
	if err != nil {
		return nil, err
	}
	vals, err := c.rdb.MGet(ctx, keys...).Result()
	err = callerErr(ctx, err)
	done(err)
	c.stats.tagReads.Add(1)
	if err != nil {
		if isCtxErr(err) {
			return nil, err
		}
		return nil, c.redisError(key, "read tag times", err)
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
			c.stats.corrupt.Add(1)
			t = time.Now().UnixMilli()
		}
		ms[i] = t
	}
	return ms, nil
}

// encodeTagged is encode with v's tags.
func (c *Cache[V]) encodeTagged(key string, v V) ([]byte, []string, error) {
	payload, err := c.encode(key, v)
	if err != nil {
		return nil, nil, err
	}
	tags, err := c.tagsOf(key, v)
	if err != nil {
		return nil, nil, err
	}
	return payload, tags, nil
}

// dropInvalidatedMany is dropInvalidated for the replies of a batch's GETs
// (or the fill path's SET ... GETs): raws[i] is gets[i]'s value if it is a
// tagged envelope that no tag invalidated, else nil; seen are the tag times
// used.
func dropInvalidatedMany[V any, R stringReply](c *Cache[V], ctx context.Context, keys []string, gets []R, count bool) (raws [][]byte, seen map[string]int64, err error) {
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
