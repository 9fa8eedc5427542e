package cache

import "time"

// Values are what a Cache does with its values that depends on their type:
// the tags of an entry, its TTL, the store that keeps them in process. The
// compiler checks that each takes the Cache's value type, so New's type
// argument is inferred from them. The zero value, none of them, is what
// most caches want:
//
//	users, err := cache.New(rdb, cache.Values[User]{}, cache.WithPrefix("user:"))
//	orders, err := cache.New(rdb, cache.Values[Order]{Tags: orderTags}, cache.WithPrefix("order:"))
type Values[V any] struct {
	// Tags tags every entry with the tags it returns for the entry's key
	// and value (nil or empty: untagged), so that InvalidateTags can
	// invalidate all the entries of a tag at once (see the package
	// comment, "Tags"). It must be fast, and safe for concurrent use.
	Tags func(key string, v V) []string
	// TTL chooses the TTL of each value (see the rule below on 0, negative
	// and too long TTLs); nil: WithTTL for all. WithTTL then only sets the
	// default the null TTL is bounded by, and the longest TTL of a tagged
	// entry: a tag's invalidation time is kept for about twice WithTTL,
	// and a tagged entry must not outlive it.
	TTL func(key string, v V) time.Duration
	// LocalStore turns on the local tier with a store of your own (check
	// it with package localstoretest), in place of WithLocal's otter or
	// WithLocalRistretto's ristretto. The cache owns it from New on: it
	// closes it when it closes, and New closes it when it fails, for
	// whatever reason.
	LocalStore LocalStore[V]
}

// Adaptive TTL. Values.TTL chooses each value's TTL from the value itself
// (a draft lives a minute, a published article a day). The TTL it returns
// is jittered like WithTTL's and used by every write of a value: a fill (Get
// and GetMany), an early or stale refresh, Set and SetVersioned. An absence
// keeps the null TTL.
//
// The rule for what the func returns:
//
//   - d > 0 (at most the century every TTL option is bounded by): the
//     value is cached for d, jittered, in whole milliseconds and for at
//     least 1 ms (the floor of every expiry written to Redis: a d or a
//     jittered TTL under it is rounded up to it, jitter or not).
//   - 0: the value is not cached. Get and GetMany return it (the fill's
//     lease is released, the local tier does not keep it); Set and
//     SetVersioned remove the key's entry instead of writing it (a
//     versioned write leaves a version tombstone, so older versions are
//     still refused for the null TTL); a refresh (early, or of an entry
//     marked stale) removes the entry it would have replaced in the same
//     way, so the next Get loads again, and the Get that waits for the
//     refresh (WithSoftLoadTimeout) returns the value.
//   - negative, longer than the century, or a panic of the func: as 0, and
//     reported to the error handler with an error wrapping
//     ErrInvalidOption. Stats counts both (TTLZero, TTLInvalid).

// Tags. Values.Tags gives every entry the tags it returns for the key and
// the value; InvalidateTags(t) makes every entry carrying t a miss
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
//     entry.Stamp.InvalidBy, the one check of every path (a Redis hit, a
//     GetMany's hits, the fill path, a local hit). Where the entry records
//     the tag's seen time, exactly when the tag's time is later: no clock is
//     involved, so the entry its loader filled is valid for the
//     invalidation it saw and invalid for any later one. Elsewhere (a load
//     of a missing key, a Set, a versioned write, an early refresh, or a
//     tag time earlier than the seen one: Redis forgot the tag's time and
//     an invalidation set it again), by the clocks: created ≤ invalidated +
//     entry.TagClockMargin. Those times are the wall clocks of the instances that
//     loaded and invalidated, so they must agree within entry.TagClockMargin (100
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
